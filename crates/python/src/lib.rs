//! `fnd_walk` for Python: fnd's engine behind `os.walk`'s interface, a
//! streaming scan, fnd's search and fdu's total.
//!
//! The modules are layers, each using only those below it (checked by
//! `tests/layers.rs`), bottom first:
//! 1. `text` (paths between bytes and Python's `str`/`bytes`);
//! 2. `errors` (the walk's errors as `OSError`s);
//! 3. `stream` (a walk on background threads, its results in batches to
//!    Python's thread, without the GIL, Ctrl-C heard);
//! 4. the functions: `walk` (`os.walk`'s tuples), `scan` (entries),
//!    `find` (fnd's search), `usage` (fdu's total).

mod errors;
mod find;
mod scan;
mod stream;
mod text;
mod usage;
mod walk;

use pyo3::prelude::*;

#[pymodule]
fn fnd_walk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(walk::walk, m)?)?;
    m.add_class::<walk::WalkIter>()?;
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_class::<scan::ScanIter>()?;
    m.add_class::<scan::Entry>()?;
    m.add_function(wrap_pyfunction!(find::find, m)?)?;
    m.add_class::<find::FindIter>()?;
    m.add_function(wrap_pyfunction!(usage::disk_usage, m)?)?;
    Ok(())
}
