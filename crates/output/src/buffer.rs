//! One thread's buffer of whole records.

use crate::Writer;

/// A thread's output: records are appended whole, and the buffer is
/// written once it holds [`Buffer::DEFAULT_LIMIT`] bytes (or the limit it
/// was made with), so a write never splits a record and threads sharing
/// one [`Writer`] never interleave inside one.
///
/// What is left is written by [`flush`](Self::flush), or when the buffer
/// is dropped.
///
/// The writes stay on the thread that makes the records. Handing full
/// buffers to a writer thread instead (a pool of four, 64 KiB each) was
/// measured for `fnd -j1 -u .` into a pipe, hot cache, quiet machine
/// (hyperfine, ratio to the serial floor, writer thread against in place):
/// src 1.14x/1.09x, 1.10x/1.08x, 1.16x/1.16x in three runs; bigdir
/// 1.12x/1.11x; fanout5 1.08x/1.04x. Never better: the pipe costs the
/// walking thread only ~0.04x (src: 1.10x into a pipe, 1.06x to
/// /dev/null), and a second thread alone costs ~0.02x, even an idle one.
///
/// ```
/// use fnd_output::{Buffer, Writer};
///
/// # fn main() -> std::io::Result<()> {
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("out");
/// let out = Writer::new(std::fs::File::create(&path)?.into());
/// let mut records = Buffer::with_limit(out, 8);
/// records.bytes().extend_from_slice(b"a/long/path\n");
/// assert!(records.end_record()); // past the limit: written now
/// records.bytes().extend_from_slice(b"short\n");
/// assert!(records.end_record()); // kept for later
/// assert_eq!(std::fs::read(&path)?, b"a/long/path\n");
/// assert!(records.flush());
/// assert_eq!(std::fs::read(&path)?, b"a/long/path\nshort\n");
/// # Ok(())
/// # }
/// ```
pub struct Buffer {
    buf: Vec<u8>,
    limit: usize,
    out: Writer,
}

/// Room past the limit for the record that crosses it, so that the buffer
/// rarely reallocates.
const SLACK: usize = 4096;

impl Buffer {
    /// Writes of tens of KiB keep the syscall count low without holding
    /// much memory per thread (larger ones, 256 KiB or 1 MiB, gained
    /// nothing measurable into a pipe).
    pub const DEFAULT_LIMIT: usize = 64 * 1024;

    /// A buffer written at [`Buffer::DEFAULT_LIMIT`] bytes.
    pub fn new(out: Writer) -> Buffer {
        Buffer::with_limit(out, Buffer::DEFAULT_LIMIT)
    }

    /// A buffer written once it holds `limit` bytes.
    pub fn with_limit(out: Writer, limit: usize) -> Buffer {
        Buffer {
            buf: Vec::with_capacity(limit + SLACK),
            limit,
            out,
        }
    }

    /// The bytes not yet written: append one whole record, then call
    /// [`end_record`](Self::end_record).
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// A record is complete: write the buffer if it is full. False when
    /// output has ended and the caller should stop producing it.
    #[inline]
    pub fn end_record(&mut self) -> bool {
        if self.buf.len() < self.limit {
            return true;
        }
        self.out.write_and_clear(&mut self.buf)
    }

    /// Write everything appended so far (say, before a message on stderr
    /// that should come after it). False when output has ended.
    pub fn flush(&mut self) -> bool {
        self.out.write_and_clear(&mut self.buf)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::file_writer;
    use std::io::Read;

    #[test]
    fn records_come_out_whole_and_in_order() {
        for limit in [1, 7, 4096, Buffer::DEFAULT_LIMIT] {
            let (reader, writer) = rustix::pipe::pipe().unwrap();
            let drain = std::thread::spawn(move || {
                let mut all = Vec::new();
                std::fs::File::from(reader).read_to_end(&mut all).unwrap();
                all
            });
            let mut records = Buffer::with_limit(Writer::new(writer), limit);
            for i in 0..50_000 {
                records.bytes().extend_from_slice(format!("{i}\n").as_bytes());
                assert!(records.end_record());
            }
            drop(records);
            let expected: String = (0..50_000).map(|i| format!("{i}\n")).collect();
            assert_eq!(drain.join().unwrap(), expected.as_bytes(), "{limit}");
        }
    }

    #[test]
    fn flush_writes_what_is_buffered() {
        let (out, path, _dir) = file_writer();
        let mut records = Buffer::with_limit(out, 1000);
        for round in 1..=20 {
            records.bytes().extend_from_slice(b"0123456789\n");
            assert!(records.end_record());
            assert!(records.flush());
            assert_eq!(std::fs::metadata(&path).unwrap().len(), round * 11);
        }
    }

    #[test]
    fn a_closed_pipe_stops_the_producer() {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        drop(reader);
        let out = Writer::new(writer);
        let mut records = Buffer::with_limit(out.clone(), 64);
        let stopped = (0..1_000_000).position(|_| {
            records.bytes().extend_from_slice(b"some/path/or/other\n");
            !records.end_record()
        });
        assert_eq!(stopped, Some(3), "the first write stops it");
        assert!(!records.flush());
        assert!(out.is_broken());
        assert_eq!(out.failure(), None);
    }
}
