//! Output of `fnd` under MPI (feature `mpi`): every rank's results and
//! commands' output go to rank 0's stdout and stderr, whole.
//!
//! Each walking thread appends records to a buffer of its own
//! ([`RankRecords`]) and hands it to the job's transport when it holds
//! [`RankOutput`]'s chunk size (1 MiB on the other ranks: a message per
//! MiB; 64 KiB on rank 0, which writes straight to its stdout, as a single
//! process does). A chunk ends at a record's end, so rank 0 writes whole
//! lines (or NUL-terminated records) in whatever order chunks arrive; a
//! command's output (`-x`: one result's commands, `-X`: one batch) is one
//! chunk per stream.
//!
//! With `--max-results` (and `-1`) rank 0 must print exactly that many
//! results, whichever ranks find them: each record is then framed by its
//! length (a little-endian `u32`), so that rank 0 ([`Rank0Out`]) can count
//! records that hold newlines themselves, writes the first ones that come,
//! and stops the whole job once it has enough.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fnd_mpi::{Handle, Stream};
use fnd_output::Writer;

use crate::exec::CommandOutput;
use crate::listing::Records;

/// Bytes a thread of a rank other than 0 gathers before it sends them.
const CHUNK: usize = 1 << 20;

/// Bytes a thread of rank 0 gathers before it writes them (as `Buffer`).
const CHUNK_HERE: usize = fnd_output::Buffer::DEFAULT_LIMIT;

/// The length before each record, when records are counted.
const FRAME: usize = 4;

/// Where a rank's output goes. Cheap to clone.
#[derive(Clone)]
pub struct RankOutput {
    handle: Handle,
    /// On rank 0: its stdout and stderr, where other ranks' chunks go too.
    here: Option<Arc<Rank0Out>>,
    /// Records are framed for counting (`--max-results`).
    framed: bool,
}

impl RankOutput {
    /// The output of this rank of the job `handle` belongs to: `here` on
    /// rank 0 (the sink the job writes other ranks' chunks to), `framed`
    /// when rank 0 counts records.
    pub fn new(handle: Handle, here: Option<Arc<Rank0Out>>, framed: bool) -> RankOutput {
        RankOutput { handle, here, framed }
    }

    /// A buffer of records for one walking thread.
    pub fn records(&self) -> RankRecords {
        let limit = if self.here.is_some() { CHUNK_HERE } else { CHUNK };
        let mut buf = Vec::with_capacity(limit + 4096);
        if self.framed {
            buf.extend_from_slice(&[0; FRAME]);
        }
        RankRecords {
            out: self.clone(),
            buf,
            start: if self.framed { FRAME } else { 0 },
            limit,
        }
    }

    /// Whether output has ended: rank 0's stdout is gone, or it printed
    /// all the results asked for.
    pub fn ended(&self) -> bool {
        self.here.as_ref().is_some_and(|h| h.ended())
    }

    /// Send `bytes` (whole records) to rank 0's `stream`; `bytes` is left
    /// empty. False once output has ended.
    fn send(&self, stream: Stream, bytes: &mut Vec<u8>) -> bool {
        if bytes.is_empty() {
            return !self.ended();
        }
        match &self.here {
            Some(here) => {
                let written = fnd_mpi::Sink::write(&**here, 0, stream, bytes);
                bytes.clear();
                if !written {
                    self.handle.stop();
                }
                written
            }
            None => {
                let chunk = std::mem::replace(bytes, Vec::with_capacity(bytes.capacity()));
                self.handle.output(stream, chunk);
                true
            }
        }
    }
}

/// One walking thread's records, on their way to rank 0.
pub struct RankRecords {
    out: RankOutput,
    buf: Vec<u8>,
    /// Where the record being appended starts (after its frame).
    start: usize,
    limit: usize,
}

impl RankRecords {
    /// Send the records complete so far.
    fn send(&mut self) -> bool {
        if !self.out.framed {
            return self.out.send(Stream::Stdout, &mut self.buf);
        }
        // The frame of the record not yet begun stays.
        let next = self.buf.split_off(self.start - FRAME);
        let sent = self.out.send(Stream::Stdout, &mut self.buf);
        self.buf = next;
        self.start = FRAME;
        sent
    }
}

impl Records for RankRecords {
    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    #[inline]
    fn end_record(&mut self) -> bool {
        if self.out.framed {
            let len = u32::try_from(self.buf.len() - self.start).expect("a record under 4 GiB");
            self.buf[self.start - FRAME..self.start].copy_from_slice(&len.to_le_bytes());
            self.buf.extend_from_slice(&[0; FRAME]);
            self.start = self.buf.len();
        }
        if self.buf.len() < self.limit {
            return true;
        }
        self.send()
    }

    fn flush(&mut self) -> bool {
        self.send()
    }
}

impl Drop for RankRecords {
    fn drop(&mut self) {
        self.send();
    }
}

impl CommandOutput for RankOutput {
    fn write(&self, outputs: &[(Vec<u8>, Vec<u8>)], nul: bool) {
        let mut stdout: Vec<u8> = outputs.iter().flat_map(|(o, _)| o.iter().copied()).collect();
        if nul {
            stdout.push(b'\0');
        }
        let mut stderr: Vec<u8> = outputs.iter().flat_map(|(_, e)| e.iter().copied()).collect();
        self.send(Stream::Stdout, &mut stdout);
        self.send(Stream::Stderr, &mut stderr);
    }
}

/// Rank 0's stdout and stderr: its own output and every other rank's.
pub struct Rank0Out {
    out: Writer,
    /// `--max-results`: records are framed, and at most this many written.
    limit: Option<usize>,
    /// Records written, when counted.
    written: Mutex<usize>,
    /// All the results asked for are written.
    full: AtomicBool,
}

impl Rank0Out {
    /// Rank 0's output through `out`; with `limit`, records come framed and
    /// no more than `limit` are written.
    pub fn new(out: Writer, limit: Option<usize>) -> Rank0Out {
        Rank0Out {
            out,
            limit,
            written: Mutex::new(0),
            full: AtomicBool::new(false),
        }
    }

    /// Output ended: stdout is gone, or the results asked for are written.
    pub fn ended(&self) -> bool {
        self.full.load(Ordering::Acquire) || self.out.is_broken()
    }

    /// Stdout failed other than by a closed pipe: fd's error, and exit 1.
    pub fn failure(&self) -> Option<fnd_output::Errno> {
        self.out.failure()
    }

    /// Stdout's reader went away (`| head`): fd exits 1 without a word.
    pub fn is_broken(&self) -> bool {
        self.out.is_broken()
    }

    /// Write the first framed records of `bytes` up to the limit.
    fn write_counted(&self, limit: usize, from: usize, bytes: &[u8]) -> bool {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if *written >= limit {
            return false;
        }
        let mut records = Vec::with_capacity(bytes.len());
        let mut rest = bytes;
        while !rest.is_empty() && *written < limit {
            let frame = rest
                .get(..FRAME)
                .and_then(|f| <[u8; FRAME]>::try_from(f).ok())
                .unwrap_or_else(|| fnd_mpi::world::fatal(format!("results from rank {from} cut inside a frame")));
            let len = u32::from_le_bytes(frame) as usize;
            let Some(record) = rest.get(FRAME..FRAME + len) else {
                fnd_mpi::world::fatal(format!("results from rank {from} cut inside a record"));
            };
            records.extend_from_slice(record);
            rest = &rest[FRAME + len..];
            *written += 1;
        }
        let ok = self.out.write_all(&records);
        if *written >= limit {
            self.full.store(true, Ordering::Release);
            return false;
        }
        ok
    }
}

impl fnd_mpi::Sink for Rank0Out {
    fn write(&self, from: usize, stream: Stream, bytes: &[u8]) -> bool {
        match (stream, self.limit) {
            (Stream::Stdout, Some(limit)) => self.write_counted(limit, from, bytes),
            (Stream::Stdout, None) => self.out.write_all(bytes),
            (Stream::Stderr, _) => {
                let _ = std::io::stderr().lock().write_all(bytes);
                true
            }
        }
    }
}
