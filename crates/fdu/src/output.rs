//! fdu's stdout: one big buffer shared by every thread. Lines are appended
//! whole under a short lock (once per directory, or once per chunk for
//! `-a`) and written a megabyte at a time, never line by line.

use std::ops::Deref;

use fnd_output::{SharedBuffer, Writer};

use crate::messages::{error_text, report};

/// Write once this much is buffered.
const FLUSH_AT: usize = 1 << 20;

pub struct Output(SharedBuffer);

impl Output {
    pub fn stdout() -> Output {
        Output::to(Writer::stdout())
    }

    /// Output to another file (tests read back what was written).
    pub fn to(writer: Writer) -> Output {
        Output(SharedBuffer::new(writer, FLUSH_AT))
    }

    /// True when a write failed for a reason other than a closed pipe.
    pub fn failed(&self) -> bool {
        self.0.writer().failure().is_some()
    }

    /// The reader is gone (or a write failed): no point in going on.
    pub fn closed(&self) -> bool {
        self.0.writer().is_broken()
    }

    /// Write what is left and report a failed write, as du does at exit:
    /// "fdu: write error: No space left on device".
    pub fn finish(&self) {
        self.0.flush();
        if let Some(errno) = self.0.writer().failure() {
            report(&format!("write error: {}", error_text(&errno.into())));
        }
    }
}

impl Deref for Output {
    type Target = SharedBuffer;

    fn deref(&self) -> &SharedBuffer {
        &self.0
    }
}

/// Columns and rows of the terminal on stdout (80x44 when it is not one).
pub fn terminal_size() -> (usize, usize) {
    match rustix::termios::tcgetwinsize(rustix::stdio::stdout()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 44),
    }
}
