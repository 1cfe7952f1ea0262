//! Paths between Python and the walk: the walk's are bytes; Python's come
//! as `str`, `bytes` or `os.PathLike` and go back spelt as they came
//! (`str` decoded as `os.fsdecode` does, so a name that is not UTF-8
//! survives as surrogate escapes and encodes back to the same bytes).

use std::os::raw::c_char;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// How the caller spelt the top directory: every path given back is spelt
/// the same way, as `os.walk` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    Str,
    Bytes,
}

/// `os.fspath(path)` as bytes (a `str` encoded as `os.fsencode` does), and
/// how it was spelt.
pub fn path_arg(path: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, Spelling)> {
    let py = path.py();
    let os = py.import("os")?;
    let path = os
        .call_method1("fspath", (path,))
        .map_err(|_| PyTypeError::new_err("expected str, bytes or os.PathLike object"))?;
    if let Ok(bytes) = path.downcast::<PyBytes>() {
        return Ok((bytes.as_bytes().to_vec(), Spelling::Bytes));
    }
    Ok((encode(&path)?, Spelling::Str))
}

/// A name or path handed back by Python (a `str` or `bytes`), as bytes.
pub fn encode(name: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = name.downcast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    // SAFETY: the argument is a live object; the result is a new reference or NULL with an exception set.
    let encoded = unsafe { Bound::from_owned_ptr_or_err(name.py(), ffi::PyUnicode_EncodeFSDefault(name.as_ptr()))? };
    Ok(encoded.downcast::<PyBytes>()?.as_bytes().to_vec())
}

/// Bytes as Python gives them back for `spelling`.
pub fn decode<'py>(py: Python<'py>, bytes: &[u8], spelling: Spelling) -> PyResult<Bound<'py, PyAny>> {
    match spelling {
        Spelling::Bytes => Ok(PyBytes::new(py, bytes).into_any()),
        // SAFETY: the pointer and length describe `bytes`, alive for the call.
        Spelling::Str => unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyUnicode_DecodeFSDefaultAndSize(bytes.as_ptr() as *const c_char, bytes.len() as ffi::Py_ssize_t),
            )
        },
    }
}
