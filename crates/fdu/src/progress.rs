//! A progress line on stderr during long scans: only when stderr is a
//! terminal, only after the scan has run for a moment, gone when it ends
//! (and when a signal ends fdu: see [`crate::interrupt`]).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Entries and bytes seen so far, counted by the scan, and a directory it
/// entered lately.
#[derive(Default)]
pub struct Progress {
    pub entries: AtomicU64,
    pub bytes: AtomicU64,
    dirs: AtomicU64,
    current: Mutex<Vec<u8>>,
}

impl Progress {
    /// The scan entered the directory at `path`: one in 64 is noted, and
    /// only when no reader holds the note (it is for a person to read).
    pub fn entered(&self, path: &[u8]) {
        if self.dirs.fetch_add(1, Relaxed).is_multiple_of(64) {
            if let Ok(mut current) = self.current.try_lock() {
                current.clear();
                current.extend_from_slice(path);
            }
        }
    }

    /// A directory the scan entered lately.
    pub fn current(&self) -> Vec<u8> {
        self.current.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Short scans finish before this and never draw anything.
const DELAY: Duration = Duration::from_millis(400);
const TICK: Duration = Duration::from_millis(100);

pub struct Ticker {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Ticker {
    /// Start the progress thread when stderr is a terminal.
    pub fn start(progress: Arc<Progress>) -> Option<Ticker> {
        if !fnd_mpi::stdio::stderr_is_terminal() {
            return None;
        }
        let (stop, stopped) = mpsc::channel::<()>();
        // No thread, no progress line: the walk goes on without it.
        let thread = std::thread::Builder::new().spawn(move || {
            if stopped.recv_timeout(DELAY) != Err(RecvTimeoutError::Timeout) {
                return;
            }
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            // Ctrl-C must not leave the line on the screen.
            crate::interrupt::progress_shown(true);
            loop {
                let entries = progress.entries.load(Relaxed);
                let bytes = progress.bytes.load(Relaxed);
                bar.set_message(format!("{entries} entries, {}", indicatif::BinaryBytes(bytes)));
                bar.tick();
                if stopped.recv_timeout(TICK) != Err(RecvTimeoutError::Timeout) {
                    break;
                }
            }
            bar.finish_and_clear();
            crate::interrupt::progress_shown(false);
        });
        Some(Ticker {
            stop,
            thread: thread.ok()?,
        })
    }

    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
