//! What a signal that ends fdu (SIGINT, SIGTERM, SIGHUP) must undo before
//! it does: the temporary file `-o FILE` is writing beside FILE is
//! removed, and a progress line on the terminal is cleared. Then the
//! signal does what it would have done, so the shell sees fdu killed by
//! it, as it sees du.
//!
//! The handler only reads atomics and calls `unlink`, `write`, `signal`
//! and `raise`, all async-signal-safe. `-i` installs its own handler
//! (it gives the terminal back) once its screen is up.

use std::ffi::{c_char, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::SeqCst};
use std::sync::Once;

/// The temporary file to remove (a leaked C string), or null.
static TEMP: AtomicPtr<c_char> = AtomicPtr::new(ptr::null_mut());
/// A progress line is on stderr now.
static PROGRESS_SHOWN: AtomicBool = AtomicBool::new(false);

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(signal: libc::c_int) {
    let temp = TEMP.swap(ptr::null_mut(), SeqCst);
    // SAFETY: unlink, write, signal and raise are async-signal-safe; `temp`
    // is a C string that is never freed.
    unsafe {
        if !temp.is_null() {
            libc::unlink(temp);
        }
        if PROGRESS_SHOWN.swap(false, SeqCst) {
            const CLEAR_LINE: &[u8] = b"\r\x1b[2K";
            libc::write(2, CLEAR_LINE.as_ptr().cast(), CLEAR_LINE.len());
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        for signal in SIGNALS {
            // SAFETY: the handler makes only async-signal-safe calls. A
            // signal the parent ignored stays ignored (as nohup wants).
            unsafe {
                let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                if libc::signal(signal, handler) == libc::SIG_IGN {
                    libc::signal(signal, libc::SIG_IGN);
                }
            }
        }
    });
}

/// The signals held back on this thread (and the handler installed)
/// while the guard lives: made and registered under it, a temporary file
/// has no moment in which a signal would leave it behind. A signal that
/// came meanwhile arrives when the guard is dropped.
pub struct Held {
    old: libc::sigset_t,
}

pub fn hold_signals() -> Held {
    install();
    // SAFETY: plain signal-mask calls on this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        Held { old }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, ptr::null_mut()) };
    }
}

/// Remove `path` if a signal ends fdu before [`keep_temp`] is called.
pub fn remove_on_signal(path: &Path) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    install();
    let old = TEMP.swap(c.into_raw(), SeqCst);
    free(old);
}

/// The temporary file is gone (renamed into place, or removed): a signal
/// leaves it alone.
pub fn keep_temp() {
    free(TEMP.swap(ptr::null_mut(), SeqCst));
}

fn free(path: *mut c_char) {
    if !path.is_null() {
        // SAFETY: made by `CString::into_raw` above, and taken out of
        // `TEMP`, so the handler can no longer reach it.
        drop(unsafe { CString::from_raw(path) });
    }
}

/// A progress line is on stderr (`true`) or was cleared (`false`).
pub fn progress_shown(shown: bool) {
    if shown {
        install();
    }
    PROGRESS_SHOWN.store(shown, SeqCst);
}
