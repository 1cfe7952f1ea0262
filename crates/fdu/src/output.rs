//! fdu's stdout: one big buffer shared by every thread. Lines are appended
//! whole under a short lock (once per directory, or once per chunk for
//! `-a`) and written a megabyte at a time, never line by line. On a rank
//! other than 0 of an MPI job the megabyte goes to rank 0 instead
//! ([`Output::forwarded`]).

use std::sync::{Mutex, RwLock};

use fnd_output::{SharedBuffer, Writer};

use crate::messages::{error_text, report};

/// Write once this much is buffered.
const FLUSH_AT: usize = 1 << 20;

pub struct Output {
    local: SharedBuffer,
    forward: Option<Forward>,
}

/// Where a chunk of whole lines goes, from a rank other than 0.
pub type Forwarder = Box<dyn Fn(Vec<u8>) + Send + Sync>;

/// Lines gathered for rank 0, and where they go now (nowhere between the
/// jobs of one run: they wait for the next).
struct Forward {
    buf: Mutex<Vec<u8>>,
    to: RwLock<Option<Forwarder>>,
}

impl Output {
    pub fn stdout() -> Output {
        Output::to(Writer::stdout())
    }

    /// Output to another file (tests read back what was written).
    pub fn to(writer: Writer) -> Output {
        Output {
            local: SharedBuffer::new(writer, FLUSH_AT),
            forward: None,
        }
    }

    /// Lines for another process, sent a megabyte at a time through what
    /// [`forward_to`](Self::forward_to) says.
    pub fn forwarded() -> Output {
        Output {
            forward: Some(Forward {
                buf: Mutex::new(Vec::new()),
                to: RwLock::new(None),
            }),
            ..Output::stdout()
        }
    }

    /// Where forwarded lines go from now on (`None`: they wait).
    pub fn forward_to(&self, to: Option<Forwarder>) {
        if let Some(f) = &self.forward {
            *f.to.write().unwrap_or_else(|e| e.into_inner()) = to;
        }
    }

    /// Append whole lines; false when output has ended.
    pub fn write(&self, lines: &[u8]) -> bool {
        let Some(f) = &self.forward else {
            return self.local.write(lines);
        };
        let mut buf = f.buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(lines);
        if buf.len() >= FLUSH_AT {
            f.send(&mut buf);
        }
        true
    }

    /// Write (or send) what is buffered; false when output has ended.
    pub fn flush(&self) -> bool {
        match &self.forward {
            Some(f) => {
                f.send(&mut f.buf.lock().unwrap_or_else(|e| e.into_inner()));
                true
            }
            None => self.local.flush(),
        }
    }

    /// True when a write failed for a reason other than a closed pipe.
    pub fn failed(&self) -> bool {
        self.local.writer().failure().is_some()
    }

    /// The reader is gone (or a write failed): no point in going on.
    pub fn closed(&self) -> bool {
        self.local.writer().is_broken()
    }

    /// Write what is left and report a failed write, as du does at exit:
    /// "fdu: write error: No space left on device".
    pub fn finish(&self) {
        self.flush();
        if let Some(errno) = self.local.writer().failure() {
            report(&format!("write error: {}", error_text(&errno.into())));
        }
    }
}

impl Forward {
    /// Send `buf` whole, under its lock (so chunks keep their order), if
    /// there is somewhere to send it.
    fn send(&self, buf: &mut Vec<u8>) {
        if buf.is_empty() {
            return;
        }
        if let Some(to) = &*self.to.read().unwrap_or_else(|e| e.into_inner()) {
            to(std::mem::take(buf));
        }
    }
}

/// Columns and rows of the terminal on stdout (80x44 when it is not one).
pub fn terminal_size() -> (usize, usize) {
    match rustix::termios::tcgetwinsize(rustix::stdio::stdout()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 44),
    }
}
