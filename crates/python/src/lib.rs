//! `fnd_walk` for Python: fnd's engine behind `os.walk`'s interface, a
//! streaming scan, fnd's search and fdu's total.
//!
//! The crate owns the Python interface only: the walking, the search and
//! the counting are `fnd-walk`'s, `fnd`'s and `fdu`'s.
//!
//! The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.

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
