//! fdu's stdout: one big buffer shared by every thread. Lines are appended
//! whole under a short lock (once per directory, or once per chunk for
//! `-a`) and written a megabyte at a time, never line by line.

use std::ops::Deref;

use fnd_output::{SharedBuffer, Writer};

/// Write once this much is buffered.
const FLUSH_AT: usize = 1 << 20;

pub struct Output(SharedBuffer);

impl Output {
    pub fn new() -> Output {
        Output(SharedBuffer::new(Writer::stdout(), FLUSH_AT))
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
            crate::report(&format!("write error: {}", crate::error_text(&errno.into())));
        }
    }
}

impl Deref for Output {
    type Target = SharedBuffer;

    fn deref(&self) -> &SharedBuffer {
        &self.0
    }
}
