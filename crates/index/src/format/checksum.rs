//! The file's checksum: of its body as it is written, and of its header
//! but the field that holds it.

use super::HEADER;

/// A checksum of `bytes`: four independent multiply-xor lanes over 8-byte
/// words, so the multiplications overlap (one lane ran at a third of the speed).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.finish()
}

/// [`checksum`] of bytes that come in pieces.
///
/// ```
/// use fnd_index::format::{checksum, Checksum};
///
/// let mut sum = Checksum::default();
/// sum.update(b"an index ");
/// sum.update(b"written as it is made");
/// assert_eq!(sum.finish(), checksum(b"an index written as it is made"));
/// ```
#[derive(Clone)]
pub struct Checksum {
    lanes: [u64; 4],
    /// The start of a 32-byte block, waiting for the rest.
    pending: [u8; 32],
    pending_len: usize,
    len: u64,
}

impl Default for Checksum {
    fn default() -> Checksum {
        Checksum {
            lanes: [1, 2, 3, 4],
            pending: [0; 32],
            pending_len: 0,
            len: 0,
        }
    }
}

impl Checksum {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.pending_len > 0 {
            let take = (32 - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < 32 {
                return;
            }
            let block = self.pending;
            Self::mix(&mut self.lanes, &block);
            self.pending_len = 0;
        }
        let mut blocks = bytes.chunks_exact(32);
        for block in &mut blocks {
            Self::mix(&mut self.lanes, block);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    #[inline(always)]
    fn mix(lanes: &mut [u64; 4], block: &[u8]) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap_or_default());
            *lane = (*lane ^ w).wrapping_mul(Self::K).rotate_left(29);
        }
    }

    pub fn finish(&self) -> u64 {
        let mut h = self.len;
        for lane in self.lanes {
            h = (h ^ lane).wrapping_mul(Self::K).rotate_left(31);
        }
        for &b in &self.pending[..self.pending_len] {
            h = (h ^ u64::from(b)).wrapping_mul(Self::K);
        }
        h ^ (h >> 32)
    }
}

/// The checksum a file stores: of its body and of its header but the sum itself.
pub(super) fn file_sum(file: &[u8]) -> u64 {
    header_sum(&file[..HEADER], checksum(&file[HEADER..]))
}

/// [`file_sum`] from the header and the body's checksum.
pub(super) fn header_sum(header: &[u8], body: u64) -> u64 {
    let header = [&header[..32], &header[40..HEADER]].concat();
    body ^ checksum(&header).rotate_left(1)
}

/// Store the right checksum in `file` (for fuzzing and tests: damage that
/// gets past the checksum must still be an error).
pub fn seal(file: &mut [u8]) {
    if file.len() >= HEADER {
        let sum = file_sum(file);
        file[32..40].copy_from_slice(&sum.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checksum_in_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for len in [0, 1, 31, 32, 33, 64, 999, 1000] {
            let whole = checksum(&bytes[..len]);
            for piece in [1, 3, 31, 32, 33, 100] {
                let mut sum = Checksum::default();
                bytes[..len].chunks(piece).for_each(|p| sum.update(p));
                assert_eq!(sum.finish(), whole, "{len} bytes in pieces of {piece}");
            }
        }
        // The files of this version depend on it staying as it is.
        assert_eq!(checksum(b"fnd"), 0x8148_98b7_3c95_f03e);
        assert_eq!(checksum(&bytes), 0xc54c_1158_25bb_5cd7);
    }
}
