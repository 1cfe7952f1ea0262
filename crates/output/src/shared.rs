//! One buffer for all threads.

use std::sync::Mutex;

use crate::writer::lock;
use crate::Writer;

/// A buffer every thread appends whole records to, under a short lock,
/// written once it holds the limit it was made with. For output whose
/// order the threads settle among themselves (each appends a finished
/// block of lines at its turn), and where a large limit saves syscalls.
///
/// ```
/// use fnd_output::{SharedBuffer, Writer};
///
/// # fn main() -> std::io::Result<()> {
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("out");
/// let out = SharedBuffer::new(Writer::new(std::fs::File::create(&path)?.into()), 1 << 20);
/// std::thread::scope(|s| {
///     s.spawn(|| out.write(b"4\tdir/a\n"));
///     s.spawn(|| out.write(b"8\tdir/b\n"));
/// });
/// assert!(out.flush());
/// let text = std::fs::read_to_string(&path)?;
/// assert!(text == "4\tdir/a\n8\tdir/b\n" || text == "8\tdir/b\n4\tdir/a\n");
/// # Ok(())
/// # }
/// ```
pub struct SharedBuffer {
    buf: Mutex<Vec<u8>>,
    limit: usize,
    out: Writer,
}

impl SharedBuffer {
    pub fn new(out: Writer, limit: usize) -> SharedBuffer {
        SharedBuffer {
            buf: Mutex::new(Vec::with_capacity(limit.min(64 * 1024))),
            limit,
            out,
        }
    }

    /// Append whole records; false when output has ended.
    pub fn write(&self, records: &[u8]) -> bool {
        let mut buf = lock(&self.buf);
        buf.extend_from_slice(records);
        if buf.len() >= self.limit {
            // Written under the lock: another thread's records must not
            // get ahead of these.
            return self.out.write_and_clear(&mut buf);
        }
        !self.out.is_broken()
    }

    /// Write what is buffered; false when output has ended.
    pub fn flush(&self) -> bool {
        self.out.write_and_clear(&mut lock(&self.buf))
    }

    /// Where the records go: whether output ended, and why.
    pub fn writer(&self) -> &Writer {
        &self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{file_writer, full_device};

    #[test]
    fn blocks_of_lines_stay_whole_between_threads() {
        let (writer, path, _dir) = file_writer();
        let out = SharedBuffer::new(writer, 1000);
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let out = &out;
                s.spawn(move || {
                    let block: Vec<u8> = [b'a' + t, b'\n'].repeat(50);
                    for _ in 0..500 {
                        assert!(out.write(&block));
                    }
                });
            }
        });
        assert!(out.flush());
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text.len(), 4 * 500 * 100);
        for block in text.chunks(100) {
            assert!(block.chunks(2).all(|line| line == &block[..2]), "a block was split");
        }
    }

    #[test]
    fn nothing_is_written_before_the_limit_or_a_flush() {
        let (writer, path, _dir) = file_writer();
        let out = SharedBuffer::new(writer, 10);
        assert!(out.write(b"12345\n"));
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        assert!(out.write(b"6789\n"));
        assert_eq!(std::fs::read(&path).unwrap(), b"12345\n6789\n");
        assert!(out.write(b"x\n"));
        assert!(out.flush());
        assert_eq!(std::fs::read(&path).unwrap(), b"12345\n6789\nx\n");
    }

    #[test]
    fn a_full_device_ends_output_with_a_failure() {
        let Some(full) = full_device() else { return };
        let out = SharedBuffer::new(full, 4);
        assert!(!out.write(b"line\n"));
        assert!(!out.write(b"x"));
        assert!(out.writer().is_broken());
        assert_eq!(out.writer().failure(), Some(crate::Errno::NOSPC));
    }
}
