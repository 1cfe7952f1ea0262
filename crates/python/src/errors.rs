//! The walk's errors as Python's: an `OSError` built from the errno, which
//! Python turns into its subclass (`PermissionError`, `FileNotFoundError`,
//! `NotADirectoryError`...), with the path as `filename`, spelt as the
//! caller spelt the top.

use std::os::unix::ffi::OsStrExt;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use crate::text::{decode, Spelling};

/// `OSError(errno, strerror, filename)`.
pub fn os_error(py: Python<'_>, errno: i32, path: &[u8], spelling: Spelling) -> PyErr {
    let message = std::io::Error::from_raw_os_error(errno).to_string();
    // Rust appends " (os error N)"; Python's message is strerror alone.
    let message = match message.rfind(" (os error ") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    };
    match decode(py, path, spelling) {
        Ok(filename) => PyOSError::new_err((errno, message, filename.unbind())),
        Err(e) => e,
    }
}

/// The errno of a walk error: a loop found by following links is `ELOOP`,
/// as the kernel would have said at its fortieth link.
pub fn errno_of(error: &fnd_walk::Error) -> i32 {
    error.errno().map_or(libc_eloop(), |e| e.raw_os_error())
}

fn libc_eloop() -> i32 {
    rustix::io::Errno::LOOP.raw_os_error()
}

/// A walk error as the `OSError` Python would have raised for its path.
pub fn walk_error(py: Python<'_>, error: &fnd_walk::Error, spelling: Spelling) -> PyErr {
    os_error(py, errno_of(error), error.path().as_os_str().as_bytes(), spelling)
}

/// Give `error` to `onerror` (when there is one), as `os.walk` does; what
/// the callback raises goes up to the caller.
pub fn report(py: Python<'_>, onerror: Option<&Py<PyAny>>, error: PyErr) -> PyResult<()> {
    match onerror {
        Some(callback) => {
            callback.call1(py, (error.value(py),))?;
            Ok(())
        }
        None => Ok(()),
    }
}
