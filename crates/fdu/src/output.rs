//! fdu's stdout: one big buffer shared by every thread. Lines are appended
//! whole under a short lock (once per directory, or once per chunk for
//! `-a`) and written a megabyte at a time, never line by line. On a rank
//! other than 0 of an MPI job the megabyte goes to rank 0 instead
//! ([`Output::forwarded`]).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
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
            return self.local.write(lines) || self.ended();
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
            None => self.local.flush() || self.ended(),
        }
    }

    /// Output ended: a reader that went away ends the process as it ends
    /// du's, by SIGPIPE (`fdu | head -1` exits 141); a failed write is
    /// said at [`finish`](Self::finish).
    fn ended(&self) -> bool {
        let writer = self.local.writer();
        if writer.is_broken() && writer.failure().is_none() {
            die_of_sigpipe();
        }
        false
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

/// End the process as a write to a closed pipe ends du: by SIGPIPE (Rust
/// ignores it, so that a write says EPIPE instead; du's shell expects the
/// signal, `fdu | head -1` then exits 141).
pub fn die_of_sigpipe() -> ! {
    // SAFETY: plain signal calls, with no handler of ours involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}

/// Whether fd 1 was closed when the process started.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Note whether stdout is closed, before Rust's runtime starts: it opens
/// /dev/null on a closed fd 1, where fdu's lines would vanish with status
/// 0 (the binary runs this from `.init_array`).
pub extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED.store(true, Relaxed);
    }
}

/// With stdout closed (`fdu >&-`), fd 1 becomes /dev/null opened for
/// reading, so that writes fail as they fail for du ("write error: Bad
/// file descriptor", status 1), and no file fdu opens can take its place.
pub fn hold_closed_stdout() {
    use std::os::fd::AsRawFd;
    if !STDOUT_CLOSED.load(Relaxed) {
        return;
    }
    if let Ok(null) = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()) {
        // SAFETY: fd 1 holds only what the runtime put there for us.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}

/// A writer to stdout for `-o -` that dies of SIGPIPE, as [`Output`] does,
/// when the reader has gone.
pub struct PipeWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for PipeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).inspect_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                die_of_sigpipe();
            }
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().inspect_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                die_of_sigpipe();
            }
        })
    }
}

/// Columns and rows of the terminal on stdout (80x44 when it is not one).
pub fn terminal_size() -> (usize, usize) {
    match rustix::termios::tcgetwinsize(rustix::stdio::stdout()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 44),
    }
}
