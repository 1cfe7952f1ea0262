//! `getdents64` over a reused buffer, record by record.
//!
//! This takes the place of `rustix::fs::RawDir` for one reason: knowing
//! where each call ended. On file systems that fill the buffer as far as
//! the directory goes (see [`crate::mounts`]), a read whose last record
//! points to the directory's end is the last, and the call that would
//! return 0 is skipped: one system call of four per directory (figures:
//! BENCHMARKS.md, "Against the targets", 2026-11-22). A short read alone
//! does not say so: Linux ends a read early, with the records it has, when
//! a signal is pending (a child's exit under `fnd -x`, a stop and `fg`), and
//! a walk that took that for the end lost the rest of the directory.
//! Records are parsed as `RawDir` does (a pointer per record, `strlen` for
//! the name): a safe, bounds-checked parse cost 2% of a serial listing.
//!
//! Offers [`DirStream`] (the records of one open directory, read from where
//! its descriptor stands) and [`Record`]. Relies on nothing else in this
//! crate.

use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::io::Errno;

/// The most a record can take: 19 bytes of header, a 255-byte name and its
/// NUL, rounded up to 8.
const MAX_RECORD: usize = 280;

/// Where a listing stands after its last record (the record's `d_off`) on
/// the file systems that mark the end: ext4 in hash order (with 64-bit or
/// 32-bit hashes), Btrfs, recent tmpfs, XFS in its larger directories. A
/// record that is not the last points to the next one, never to these
/// (ext4 skips the values when it hashes a name). Where the end is not
/// marked (ext4 without `dir_index`, small XFS directories, older tmpfs)
/// the directory is read until a call returns 0.
const END_POSITIONS: [u64; 2] = [i32::MAX as u64, i64::MAX as u64];

/// The records of one directory, read from where its descriptor stands.
pub(crate) struct DirStream<'a> {
    fd: BorrowedFd<'a>,
    buf: &'a mut [MaybeUninit<u8>],
    /// Bytes of `buf` the last call filled, and how far they are used.
    filled: usize,
    at: usize,
    /// No call is left to make: the last returned 0 or failed.
    last_read: bool,
    /// `d_off` of the last record handed out.
    position: u64,
    end_marks_trusted: bool,
}

/// One record: a name with what the kernel said about it.
pub(crate) struct Record<'a> {
    pub(crate) ino: u64,
    /// Where the listing goes on after this record (`d_off`).
    pub(crate) next_position: u64,
    pub(crate) d_type: u8,
    pub(crate) name: &'a [u8],
}

impl<'a> DirStream<'a> {
    /// Read `fd` through `buf`; with `end_marks_trusted`, a call whose last
    /// record points to the end ([`END_POSITIONS`]) is taken as the last.
    pub(crate) fn new(fd: BorrowedFd<'a>, buf: &'a mut [MaybeUninit<u8>], end_marks_trusted: bool) -> Self {
        assert!(buf.len() >= MAX_RECORD, "a getdents buffer holds at least one record");
        DirStream {
            fd,
            buf,
            filled: 0,
            at: 0,
            last_read: false,
            position: 0,
            end_marks_trusted,
        }
    }

    /// Whether every record the last call read has been handed out: the
    /// stream may stop here and go on later from the descriptor.
    pub(crate) fn drained(&self) -> bool {
        self.at == self.filled
    }

    /// The next record, `None` at the end; an error ends the stream.
    #[allow(clippy::should_implement_trait)] // records borrow the stream's buffer
    #[inline(always)]
    pub(crate) fn next(&mut self) -> Option<Result<Record<'_>, Errno>> {
        if self.at == self.filled {
            if self.last_read || (self.end_marks_trusted && END_POSITIONS.contains(&self.position)) {
                return None;
            }
            match self.fill() {
                Ok(0) => {
                    self.last_read = true;
                    return None;
                }
                Ok(n) => {
                    self.filled = n;
                    self.at = 0;
                }
                Err(e) => {
                    self.last_read = true;
                    return Some(Err(e));
                }
            }
        }
        let left = self.filled - self.at;
        // SAFETY: the kernel wrote whole records into the first `filled`
        // bytes, each naming its length, with a NUL-terminated name.
        unsafe {
            let record = self.buf.as_ptr().add(self.at).cast::<u8>();
            let reclen = if left >= 20 {
                usize::from(record.add(16).cast::<u16>().read_unaligned())
            } else {
                0
            };
            if reclen < 20 || reclen > left {
                // Never from a sound kernel; stop rather than loop or overrun.
                self.at = self.filled;
                self.last_read = true;
                return Some(Err(Errno::IO));
            }
            self.at += reclen;
            self.position = record.add(8).cast::<u64>().read_unaligned();
            let name = std::ffi::CStr::from_ptr(record.add(19).cast()).to_bytes();
            Some(Ok(Record {
                ino: record.cast::<u64>().read_unaligned(),
                next_position: self.position,
                d_type: *record.add(18),
                name,
            }))
        }
    }

    fn fill(&mut self) -> Result<usize, Errno> {
        loop {
            // SAFETY: the kernel writes at most `len` bytes into the buffer.
            // (A raw system call: glibc's own wrapper is not in every libc.)
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let errno = Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
            if errno != Errno::INTR {
                return Err(errno);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn names(dir: &std::path::Path, buf_len: usize, end_marks_trusted: bool) -> Vec<Vec<u8>> {
        let fd = std::fs::File::open(dir).unwrap();
        let mut buf = vec![MaybeUninit::uninit(); buf_len];
        let mut stream = DirStream::new(fd.as_fd(), &mut buf, end_marks_trusted);
        let mut out = Vec::new();
        while let Some(record) = stream.next() {
            out.push(record.unwrap().name.to_vec());
        }
        out.sort();
        out
    }

    #[test]
    fn every_record_comes_out_once_whatever_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let mut expected = vec![b".".to_vec(), b"..".to_vec()];
        for i in 0..300 {
            let name = format!("{i:0>width$}", width = 1 + i % 250);
            std::fs::write(dir.path().join(&name), "").unwrap();
            expected.push(name.into_bytes());
        }
        expected.sort();
        for buf_len in [MAX_RECORD, 1000, 4096, 64 * 1024] {
            for end_marks_trusted in [false, true] {
                assert_eq!(
                    names(dir.path(), buf_len, end_marks_trusted),
                    expected,
                    "{buf_len} {end_marks_trusted}"
                );
            }
        }
    }

    #[test]
    fn records_say_type_and_position() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let fd = std::fs::File::open(dir.path()).unwrap();
        let mut buf = vec![MaybeUninit::uninit(); 4096];
        let mut stream = DirStream::new(fd.as_fd(), &mut buf, false);
        let mut found = false;
        while let Some(record) = stream.next() {
            let record = record.unwrap();
            assert!(record.ino != 0 && record.next_position != 0);
            if record.name == b"sub" {
                found = record.d_type == libc::DT_DIR;
            }
        }
        assert!(found);
    }
}
