//! One thread's buffer of whole records.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::Writer;

/// A thread's output: records are appended whole, and the buffer is
/// written once it holds [`Buffer::DEFAULT_LIMIT`] bytes (or the limit it
/// was made with), so a write never splits a record and threads sharing
/// one [`Writer`] never interleave inside one.
///
/// What is left is written by [`flush`](Self::flush), or when the buffer
/// is dropped.
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
    /// Boxed: most buffers write on their own thread and need none of it.
    background: Option<Box<Background>>,
}

/// Room past the limit for the record that crosses it, so that the buffer
/// rarely reallocates.
const SLACK: usize = 4096;

impl Buffer {
    /// Writes of tens of KiB keep the syscall count low without holding
    /// much memory per thread.
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
            background: None,
        }
    }

    /// Have a thread of its own do the writes: a full buffer is handed
    /// over and another one (of a few, reused) filled meanwhile, so the
    /// thread producing records never waits on a write unless all of them
    /// are being written. The order of the output stays the order of the
    /// records. If no thread can be started, the writes stay on the
    /// calling thread.
    ///
    /// ```
    /// use std::io::Read;
    /// use fnd_output::{Buffer, Writer};
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let (reader, writer) = rustix::pipe::pipe()?;
    /// let mut records = Buffer::with_limit(Writer::new(writer), 4096).in_background();
    /// let drain = std::thread::spawn(move || {
    ///     let mut all = Vec::new();
    ///     std::fs::File::from(reader).read_to_end(&mut all).map(|_| all)
    /// });
    /// for i in 0..10_000 {
    ///     records.bytes().extend_from_slice(format!("{i}\n").as_bytes());
    ///     assert!(records.end_record());
    /// }
    /// drop(records); // writes the rest, waits for the writes, closes the pipe
    /// let all = drain.join().unwrap()?;
    /// let expected: String = (0..10_000).map(|i| format!("{i}\n")).collect();
    /// assert_eq!(all, expected.as_bytes());
    /// # Ok(())
    /// # }
    /// ```
    pub fn in_background(mut self) -> Buffer {
        if self.background.is_none() {
            self.background = Background::start(&self.out).map(Box::new);
        }
        self
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
        match &mut self.background {
            Some(background) => {
                background.hand_over(&mut self.buf, self.limit + SLACK);
                !self.out.is_broken()
            }
            None => self.out.write_and_clear(&mut self.buf),
        }
    }

    /// Write everything appended so far and wait until it is written (say,
    /// before a message on stderr that should come after it). False when
    /// output has ended.
    pub fn flush(&mut self) -> bool {
        match &mut self.background {
            Some(background) => {
                if !self.buf.is_empty() {
                    background.hand_over(&mut self.buf, self.limit + SLACK);
                }
                background.wait_for_writes();
                !self.out.is_broken()
            }
            None => self.out.write_and_clear(&mut self.buf),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Buffers in use at once in the background, the one being filled
/// included: enough for the producer to go on while one is written and
/// one waits, little memory.
const POOL: usize = 4;

/// The writer thread of [`Buffer::in_background`] and the buffers that
/// circulate between it and the producer.
struct Background {
    /// Full buffers, to the writer thread (`None` once closed, on drop).
    full: Option<Sender<Vec<u8>>>,
    /// Written buffers, emptied, back from the writer thread.
    written: Receiver<Vec<u8>>,
    /// Empty buffers on hand.
    spares: Vec<Vec<u8>>,
    /// Buffers made so far, the one being filled included.
    made: usize,
    /// Buffers with the writer thread.
    away: usize,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    fn start(out: &Writer) -> Option<Background> {
        let (full, to_write) = mpsc::channel::<Vec<u8>>();
        let (give_back, written) = mpsc::channel();
        let out = out.clone();
        let thread = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || {
                for mut buf in to_write {
                    // Once output has ended this only empties the buffer,
                    // so the producer never waits on a dead writer.
                    out.write_and_clear(&mut buf);
                    if give_back.send(buf).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Background {
            full: Some(full),
            written,
            spares: Vec::new(),
            made: 1,
            away: 0,
            thread: Some(thread),
        })
    }

    /// Send `buf` to be written, replacing it with an empty one.
    fn hand_over(&mut self, buf: &mut Vec<u8>, capacity: usize) {
        let empty = match self.spares.pop() {
            Some(spare) => spare,
            None if self.made < POOL => {
                self.made += 1;
                Vec::with_capacity(capacity)
            }
            None => self.take_written(),
        };
        let full = std::mem::replace(buf, empty);
        if let Some(sender) = &self.full {
            if sender.send(full).is_ok() {
                self.away += 1;
            }
        }
    }

    /// Wait for a buffer the writer thread is done with.
    fn take_written(&mut self) -> Vec<u8> {
        match self.written.recv() {
            Ok(buf) => {
                self.away -= 1;
                buf
            }
            // The writer thread is gone (it cannot be, short of a panic):
            // nothing more will come back.
            Err(_) => {
                self.away = 0;
                Vec::new()
            }
        }
    }

    fn wait_for_writes(&mut self) {
        while self.away > 0 {
            let buf = self.take_written();
            self.spares.push(buf);
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Closing the channel ends the writer thread's loop.
        self.full = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::file_writer;
    use std::io::Read;

    /// Records `0\n` to `count-1\n` written through `make(writer)` into a
    /// pipe; what the reader got.
    fn through_pipe(count: usize, make: impl FnOnce(Writer) -> Buffer) -> Vec<u8> {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        let drain = std::thread::spawn(move || {
            let mut all = Vec::new();
            std::fs::File::from(reader).read_to_end(&mut all).unwrap();
            all
        });
        let mut records = make(Writer::new(writer));
        for i in 0..count {
            records
                .bytes()
                .extend_from_slice(format!("{i}\n").as_bytes());
            assert!(records.end_record());
        }
        drop(records);
        drain.join().unwrap()
    }

    fn numbered(count: usize) -> Vec<u8> {
        (0..count)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn records_come_out_whole_and_in_order() {
        for limit in [1, 7, 4096, Buffer::DEFAULT_LIMIT] {
            assert_eq!(
                through_pipe(50_000, |w| Buffer::with_limit(w, limit)),
                numbered(50_000),
                "{limit}"
            );
            assert_eq!(
                through_pipe(50_000, |w| Buffer::with_limit(w, limit).in_background()),
                numbered(50_000),
                "{limit}, in the background"
            );
        }
    }

    #[test]
    fn flush_waits_until_the_background_wrote_everything() {
        let (out, path, _dir) = file_writer();
        let mut records = Buffer::with_limit(out, 16).in_background();
        for round in 1..=20 {
            for _ in 0..100 {
                records.bytes().extend_from_slice(b"0123456789\n");
                assert!(records.end_record());
            }
            assert!(records.flush());
            assert_eq!(std::fs::metadata(&path).unwrap().len(), round * 1100);
        }
    }

    #[test]
    fn a_closed_pipe_stops_the_producer_in_both_modes() {
        for background in [false, true] {
            let (reader, writer) = rustix::pipe::pipe().unwrap();
            drop(reader);
            let out = Writer::new(writer);
            let mut records = Buffer::with_limit(out.clone(), 64);
            if background {
                records = records.in_background();
            }
            let stopped = (0..1_000_000).position(|_| {
                records.bytes().extend_from_slice(b"some/path/or/other\n");
                !records.end_record()
            });
            assert!(stopped.is_some(), "background {background}: never stopped");
            assert!(!records.flush());
            assert!(out.is_broken());
            assert_eq!(out.failure(), None);
        }
    }

    #[test]
    fn the_background_keeps_to_its_pool() {
        let (out, _, _dir) = file_writer();
        let mut records = Buffer::with_limit(out, 10).in_background();
        for _ in 0..10_000 {
            records.bytes().extend_from_slice(b"0123456789\n");
            records.end_record();
            let background = records.background.as_ref().unwrap();
            assert!(background.made <= POOL);
            assert!(background.away + background.spares.len() < POOL);
        }
    }
}
