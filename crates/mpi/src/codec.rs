//! The bytes of every message between ranks, and the primitives that users
//! of the crate encode their own payloads with (work items, application
//! messages, results).
//!
//! A message is one kind byte followed by its fields; integers are little
//! endian `u32`/`u64`, byte strings a `u32` length then the bytes. Decoding
//! borrows from the received buffer, checks every length against what is
//! left before it allocates, and rejects trailing bytes, so that each
//! message has exactly one encoding: `decode(encode(m)) == m` and
//! `encode(decode(b)) == b` whenever `decode(b)` succeeds. A message that
//! does not decode is a bug or a corrupted transport; the transport turns
//! the [`DecodeError`] into one line and aborts the job.
//!
//! Nothing here needs MPI: the fuzz target `mpi_messages` and the protocol
//! tests use it as it is.
//!
//! ```
//! use fnd_mpi::codec::{Message, Stream};
//! let bytes = Message::Output { stream: Stream::Stdout, bytes: b"a\nb\n" }.encode();
//! assert_eq!(
//!     Message::decode(&bytes).unwrap(),
//!     Message::Output { stream: Stream::Stdout, bytes: b"a\nb\n" }
//! );
//! let ack = Message::Ack(2).encode();
//! assert!(Message::decode(&ack[..3]).is_err());
//! ```

use std::fmt;

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was wrong, in a few words.
    pub what: &'static str,
    /// The offset in the message where it was found.
    pub at: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for DecodeError {}

/// Appends fields to a buffer in the crate's encoding.
#[derive(Default, Debug)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A buffer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    /// A `u32`, little endian.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `u64`, little endian.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A byte string: its length as a `u32`, then the bytes.
    ///
    /// # Panics
    /// If `v` is 4 GiB or longer (no message of this crate carries that).
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        let len = u32::try_from(v.len()).expect("a field shorter than 4 GiB");
        self.u32(len);
        self.buf.extend_from_slice(v);
        self
    }

    /// Bytes as they are, without a length: only as a message's last field.
    pub fn rest(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }

    /// The encoded buffer.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

/// Reads fields written by [`Writer`], checking each against what is left.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, at: 0 }
    }

    /// An error at the current offset.
    pub fn error(&self, what: &'static str) -> DecodeError {
        DecodeError { what, at: self.at }
    }

    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.error(what));
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1, "truncated byte")?[0])
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4, "truncated u32")?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8, "truncated u64")?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A byte string written by [`Writer::bytes`].
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        self.take(len, "byte string longer than the message")
    }

    /// A count of things that each take at least `min_size` bytes: checked
    /// against what is left, so that a corrupted count cannot make the
    /// decoder allocate more than the message could hold.
    pub fn count(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size.max(1)) > self.remaining() {
            return Err(self.error("count larger than the message could hold"));
        }
        Ok(n)
    }

    /// All the bytes left.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.at..];
        self.at = self.buf.len();
        s
    }

    /// Checks that nothing is left.
    pub fn end(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.error("trailing bytes"))
        }
    }
}

/// Which of rank 0's streams forwarded output goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Everything one rank says to another.
///
/// Requests and their replies: [`StealRequest`](Message::StealRequest) →
/// [`Work`](Message::Work) or [`NoWork`](Message::NoWork);
/// [`Work`](Message::Work) and [`App`](Message::App) → [`Ack`](Message::Ack)
/// (Dijkstra–Scholten, possibly later and batched);
/// [`Output`](Message::Output) → [`OutputAck`](Message::OutputAck);
/// [`Stop`](Message::Stop) → [`StopAck`](Message::StopAck). [`Done`](Message::Done)
/// and [`Result`](Message::Result) need no reply: their receiver waits for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// An idle rank asks for part of the receiver's pending work.
    StealRequest,
    /// The victim of a steal has nothing to give.
    NoWork,
    /// Work items, each an opaque byte string (a steal's answer).
    Work(Vec<&'a [u8]>),
    /// `count` work or application messages are done with.
    Ack(u32),
    /// An application message.
    App(&'a [u8]),
    /// Whole records for one of rank 0's streams.
    Output {
        /// Which stream.
        stream: Stream,
        /// The records.
        bytes: &'a [u8],
    },
    /// Rank 0 wrote `count` of the receiver's output chunks.
    OutputAck(u32),
    /// Every rank is to stop its work.
    Stop,
    /// The receiver of a stop has stopped.
    StopAck,
    /// The job is over: every rank is idle and nothing is in flight.
    Done,
    /// A rank's result for rank 0, after the job is over.
    Result(&'a [u8]),
}

const STEAL_REQUEST: u8 = 0;
const NO_WORK: u8 = 1;
const WORK: u8 = 2;
const ACK: u8 = 3;
const APP: u8 = 4;
const OUTPUT: u8 = 5;
const OUTPUT_ACK: u8 = 6;
const STOP: u8 = 7;
const STOP_ACK: u8 = 8;
const DONE: u8 = 9;
const RESULT: u8 = 10;

const STDOUT: u8 = 1;
const STDERR: u8 = 2;

impl<'a> Message<'a> {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(self.encoded_len());
        match self {
            Message::StealRequest => w.u8(STEAL_REQUEST),
            Message::NoWork => w.u8(NO_WORK),
            Message::Work(items) => {
                w.u8(WORK)
                    .u32(u32::try_from(items.len()).expect("fewer than 2^32 items"));
                for item in items {
                    w.bytes(item);
                }
                &mut w
            }
            Message::Ack(n) => w.u8(ACK).u32(*n),
            Message::App(bytes) => w.u8(APP).rest(bytes),
            Message::Output { stream, bytes } => w
                .u8(OUTPUT)
                .u8(match stream {
                    Stream::Stdout => STDOUT,
                    Stream::Stderr => STDERR,
                })
                .rest(bytes),
            Message::OutputAck(n) => w.u8(OUTPUT_ACK).u32(*n),
            Message::Stop => w.u8(STOP),
            Message::StopAck => w.u8(STOP_ACK),
            Message::Done => w.u8(DONE),
            Message::Result(bytes) => w.u8(RESULT).rest(bytes),
        };
        w.finish()
    }

    fn encoded_len(&self) -> usize {
        1 + match self {
            Message::Work(items) => 4 + items.iter().map(|i| 4 + i.len()).sum::<usize>(),
            Message::App(b) | Message::Result(b) => b.len(),
            Message::Output { bytes, .. } => 1 + bytes.len(),
            Message::Ack(_) | Message::OutputAck(_) => 4,
            _ => 0,
        }
    }

    /// Reads a message from its bytes (see the module doc for what is checked).
    pub fn decode(buf: &'a [u8]) -> Result<Message<'a>, DecodeError> {
        let mut r = Reader::new(buf);
        let kind = r.u8().map_err(|_| r.error("empty message"))?;
        let msg = match kind {
            STEAL_REQUEST => Message::StealRequest,
            NO_WORK => Message::NoWork,
            WORK => {
                let n = r.count(4)?;
                if n == 0 {
                    return Err(r.error("work message without items"));
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(r.bytes()?);
                }
                Message::Work(items)
            }
            ACK | OUTPUT_ACK => {
                let n = r.u32()?;
                if n == 0 {
                    return Err(r.error("acknowledgement of nothing"));
                }
                if kind == ACK {
                    Message::Ack(n)
                } else {
                    Message::OutputAck(n)
                }
            }
            APP => Message::App(r.rest()),
            OUTPUT => {
                let stream = match r.u8()? {
                    STDOUT => Stream::Stdout,
                    STDERR => Stream::Stderr,
                    _ => return Err(r.error("unknown output stream")),
                };
                Message::Output {
                    stream,
                    bytes: r.rest(),
                }
            }
            STOP => Message::Stop,
            STOP_ACK => Message::StopAck,
            DONE => Message::Done,
            RESULT => Message::Result(r.rest()),
            _ => {
                return Err(DecodeError {
                    what: "unknown message kind",
                    at: 0,
                })
            }
        };
        r.end()?;
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> Vec<Message<'static>> {
        vec![
            Message::StealRequest,
            Message::NoWork,
            Message::Work(vec![b"a", b"", b"\0\xff/x"]),
            Message::Ack(3),
            Message::App(b""),
            Message::App(b"payload"),
            Message::Output {
                stream: Stream::Stdout,
                bytes: b"x\n",
            },
            Message::Output {
                stream: Stream::Stderr,
                bytes: b"",
            },
            Message::OutputAck(1),
            Message::Stop,
            Message::StopAck,
            Message::Done,
            Message::Result(b"\x01\x02"),
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        for m in all_kinds() {
            let b = m.encode();
            assert_eq!(b.len(), m.encoded_len(), "{m:?}");
            assert_eq!(Message::decode(&b).unwrap(), m);
        }
    }

    #[test]
    fn truncation_and_trailing_bytes_are_errors() {
        for m in all_kinds() {
            let b = m.encode();
            let fixed_size = !matches!(m, Message::App(_) | Message::Output { .. } | Message::Result(_));
            if fixed_size {
                for cut in 0..b.len() {
                    assert!(Message::decode(&b[..cut]).is_err(), "{m:?} cut at {cut}");
                }
                let mut longer = b.clone();
                longer.push(0);
                assert_eq!(Message::decode(&longer).unwrap_err().what, "trailing bytes");
            }
        }
        assert!(Message::decode(b"").is_err());
    }

    #[test]
    fn nonsense_is_rejected_without_allocating_for_it() {
        assert_eq!(Message::decode(&[200]).unwrap_err().what, "unknown message kind");
        // A count of 2^32-1 items in a 9-byte message.
        let e = Message::decode(&[WORK, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.what, "count larger than the message could hold");
        assert!(Message::decode(&[WORK, 0, 0, 0, 0]).is_err());
        assert!(Message::decode(&[ACK, 0, 0, 0, 0]).is_err());
        assert!(Message::decode(&[OUTPUT, 3, b'x']).is_err());
        assert!(Message::decode(&[WORK, 1, 0, 0, 0, 9, 0, 0, 0, b'x']).is_err());
    }
}
