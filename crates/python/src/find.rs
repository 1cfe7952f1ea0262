//! `fnd_walk.find`: fnd's search, its filters judged on the walking
//! threads, the paths it finds handed to Python in batches.
//!
//! The keywords become fnd's own command line, parsed and resolved by the
//! `fnd` crate exactly as the command does, so a query means here what it
//! means to `fnd` (defaults included: hidden entries skipped, ignore files
//! obeyed, smart case); only where results go differs.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use clap::Parser;
use fnd::cli::Cli;
use fnd::config::{Config, OutputEnv};
use fnd::found::{Emit, Found};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::os_error;
use crate::stream::{Outlet, Stream};
use crate::text::{decode, path_arg, Spelling};

/// Results found, their paths end to end.
pub struct Paths {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// Results a walking thread gathers before handing them over.
const BATCH: usize = 1024;

/// Where one walking thread's results go: to Python's thread, in batches.
struct Collect {
    outlet: Outlet<Paths>,
    paths: Paths,
}

impl Emit for Collect {
    fn emit(&mut self, entry: &impl Found, prefix: &[u8]) -> bool {
        self.paths.bytes.extend_from_slice(prefix);
        self.paths.bytes.extend_from_slice(entry.name_bytes());
        self.paths.ends.push(self.paths.bytes.len());
        if self.paths.ends.len() >= BATCH {
            return self.flush();
        }
        true
    }

    fn flush(&mut self) -> bool {
        if self.paths.ends.is_empty() {
            return !self.outlet.cancelled();
        }
        let paths = std::mem::replace(
            &mut self.paths,
            Paths {
                bytes: Vec::new(),
                ends: Vec::new(),
            },
        );
        self.outlet.send(vec![paths]) == fnd_walk::Flow::Continue
    }
}

impl Drop for Collect {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The iterator `fnd_walk.find` returns.
#[pyclass(module = "fnd_walk")]
pub struct FindIter {
    stream: Option<Stream<Paths>>,
    batches: VecDeque<Paths>,
    current: Option<(Paths, usize, usize)>,
    spelling: Spelling,
}

#[pymethods]
impl FindIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        loop {
            if let Some((paths, index, start)) = &mut self.current {
                if *index < paths.ends.len() {
                    let end = paths.ends[*index];
                    let path = decode(py, &paths.bytes[*start..end], self.spelling)?;
                    *index += 1;
                    *start = end;
                    return Ok(Some(path));
                }
                self.current = None;
            }
            if let Some(paths) = self.batches.pop_front() {
                self.current = Some((paths, 0, 0));
                continue;
            }
            let Some(stream) = self.stream.as_mut() else {
                return Ok(None);
            };
            match stream.next_batch(py)? {
                Some(batch) => self.batches.extend(batch),
                None => self.stream = None,
            }
        }
    }

    /// Stop the search now (it also stops when the iterator is collected).
    fn close(&mut self, py: Python<'_>) {
        self.batches.clear();
        self.current = None;
        if let Some(mut stream) = self.stream.take() {
            stream.stop(py);
        }
    }
}

/// A keyword that takes one value or several: `"rs"` or `["rs", "toml"]`.
fn values(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(arg) = arg else {
        return Ok(Vec::new());
    };
    if let Ok(s) = arg.downcast::<PyString>() {
        return Ok(vec![s.extract::<String>()?]);
    }
    arg.try_iter()?.map(|v| v?.extract::<String>()).collect()
}

/// `find(top=".", pattern=None, *, ...)`: see the package's README.
#[pyfunction]
#[pyo3(signature = (
    top = None, pattern = None, *, glob = false, fixed_strings = false, case_sensitive = None,
    full_path = false, extension = None, r#type = None, size = None, changed_within = None,
    changed_before = None, exclude = None, hidden = false, ignore = true, follow = false,
    min_depth = None, max_depth = None, threads = 0,
))]
#[allow(clippy::too_many_arguments)]
pub fn find(
    py: Python<'_>,
    top: Option<&Bound<'_, PyAny>>,
    pattern: Option<&str>,
    glob: bool,
    fixed_strings: bool,
    case_sensitive: Option<bool>,
    full_path: bool,
    extension: Option<&Bound<'_, PyAny>>,
    r#type: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    changed_within: Option<&str>,
    changed_before: Option<&str>,
    exclude: Option<&Bound<'_, PyAny>>,
    hidden: bool,
    ignore: bool,
    follow: bool,
    min_depth: Option<usize>,
    max_depth: Option<usize>,
    threads: usize,
) -> PyResult<FindIter> {
    let (root, spelling) = match top {
        Some(top) => path_arg(top)?,
        None => (b".".to_vec(), Spelling::Str),
    };
    // fnd says "not a directory" for a missing path too; Python's habit is
    // the errno's own exception.
    match std::fs::metadata(std::ffi::OsStr::from_bytes(&root)) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(os_error(py, rustix::io::Errno::NOTDIR.raw_os_error(), &root, spelling)),
        Err(e) => return Err(os_error(py, e.raw_os_error().unwrap_or(5), &root, spelling)),
    }
    let mut args: Vec<OsString> = vec!["fnd".into()];
    let mut flag = |on: bool, name: &str| {
        if on {
            args.push(name.into());
        }
    };
    flag(glob, "--glob");
    flag(fixed_strings, "--fixed-strings");
    flag(case_sensitive == Some(true), "--case-sensitive");
    flag(case_sensitive == Some(false), "--ignore-case");
    flag(full_path, "--full-path");
    flag(hidden, "--hidden");
    flag(!ignore, "--no-ignore");
    flag(follow, "--follow");
    for (name, arg) in [
        ("--extension", extension),
        ("--type", r#type),
        ("--size", size),
        ("--exclude", exclude),
    ] {
        for value in values(arg)? {
            args.push(format!("{name}={value}").into());
        }
    }
    for (name, value) in [
        ("--changed-within", changed_within),
        ("--changed-before", changed_before),
    ] {
        if let Some(value) = value {
            args.push(format!("{name}={value}").into());
        }
    }
    for (name, value) in [("--min-depth", min_depth), ("--max-depth", max_depth)] {
        if let Some(value) = value {
            args.push(format!("{name}={value}").into());
        }
    }
    if threads > 0 {
        args.push(format!("--threads={threads}").into());
    }
    args.push("--".into());
    args.push(pattern.unwrap_or("").into());
    args.push(OsString::from_vec(root));
    let cli = Cli::try_parse_from(args).map_err(|e| PyValueError::new_err(e.to_string().trim().to_string()))?;
    let config = Config::new_in(&cli, &OutputEnv::here()).map_err(PyValueError::new_err)?;
    let search = config.search;
    let stream = Stream::start(move |outlet: Outlet<Paths>| {
        fnd::search::run(search, || Collect {
            outlet: outlet.clone(),
            paths: Paths {
                bytes: Vec::new(),
                ends: Vec::new(),
            },
        });
    })?;
    Ok(FindIter {
        stream: Some(stream),
        batches: VecDeque::new(),
        current: None,
        spelling,
    })
}
