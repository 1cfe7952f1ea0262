//! `fnd_walk.scan`: every entry below a top, as `Entry` objects shaped
//! like `os.DirEntry`, streamed from the walk's chunks.

use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use fnd_walk::{Chunk, ChunkBuf, Error, FileType, Metadata, Order, WalkBuilder};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::IntoPyObjectExt;

use crate::errors::{report, walk_error};
use crate::stream::{Batcher, Items, Stream};
use crate::text::{decode, path_arg, Spelling};

/// One entry of a scan, like `os.DirEntry`.
#[pyclass(module = "fnd_walk", name = "Entry", frozen)]
pub struct Entry {
    path: Box<[u8]>,
    name_start: usize,
    depth: usize,
    file_type: FileType,
    /// The type behind a symlink, when the scan followed links.
    target_type: FileType,
    ino: u64,
    /// Fetched by the walk when the scan was asked for stats (`stat=True`).
    meta: Option<Metadata>,
    spelling: Spelling,
}

#[pymethods]
impl Entry {
    /// The entry's path: the top joined with the names below it.
    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        decode(py, &self.path, self.spelling)
    }

    #[getter]
    fn name<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        decode(py, &self.path[self.name_start..], self.spelling)
    }

    /// Levels below the top (the top's own entries are at 1).
    #[getter]
    fn depth(&self) -> usize {
        self.depth
    }

    #[pyo3(signature = (*, follow_symlinks = true))]
    fn is_dir(&self, follow_symlinks: bool) -> bool {
        self.kind(follow_symlinks) == FileType::Dir
    }

    #[pyo3(signature = (*, follow_symlinks = true))]
    fn is_file(&self, follow_symlinks: bool) -> bool {
        self.kind(follow_symlinks) == FileType::File
    }

    fn is_symlink(&self) -> bool {
        self.file_type == FileType::Symlink
    }

    fn inode(&self) -> u64 {
        self.ino
    }

    /// `os.stat_result` of the entry: from the walk's own stat when the
    /// scan fetched them in bulk, else one `stat` now (`lstat` with
    /// `follow_symlinks=False`), as `os.DirEntry.stat` does.
    #[pyo3(signature = (*, follow_symlinks = true))]
    fn stat<'py>(&self, py: Python<'py>, follow_symlinks: bool) -> PyResult<Bound<'py, PyAny>> {
        match &self.meta {
            Some(m) if !(follow_symlinks && self.file_type == FileType::Symlink) => stat_result(py, m),
            _ => {
                let kwargs = pyo3::types::PyDict::new(py);
                kwargs.set_item("follow_symlinks", follow_symlinks)?;
                py.import("os")?.getattr("stat")?.call((self.path(py)?,), Some(&kwargs))
            }
        }
    }

    fn __fspath__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.path(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<fnd_walk.Entry {}>", self.path(py)?.repr()?))
    }
}

impl Entry {
    fn kind(&self, follow: bool) -> FileType {
        if !follow || self.file_type != FileType::Symlink {
            return self.file_type;
        }
        if self.target_type != FileType::Symlink {
            return self.target_type;
        }
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&self.path));
        fnd_walk::meta::stat_path(path, true).map_or(FileType::Symlink, |m| m.file_type())
    }
}

static STAT_RESULT: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// The walk's metadata as `os.stat_result` (`st_blksize` is None: the walk does not keep it).
fn stat_result<'py>(py: Python<'py>, m: &Metadata) -> PyResult<Bound<'py, PyAny>> {
    let class = STAT_RESULT.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("os")?.getattr("stat_result")?.unbind())
    })?;
    let ns = |s: i64, n: u32| s as i128 * 1_000_000_000 + n as i128;
    let float = |s: i64, n: u32| s as f64 + n as f64 * 1e-9;
    let fields = vec![
        m.mode.into_bound_py_any(py)?,
        m.ino.into_bound_py_any(py)?,
        m.dev.into_bound_py_any(py)?,
        m.nlink.into_bound_py_any(py)?,
        m.uid.into_bound_py_any(py)?,
        m.gid.into_bound_py_any(py)?,
        m.size.into_bound_py_any(py)?,
        m.atime.into_bound_py_any(py)?,
        m.mtime.into_bound_py_any(py)?,
        m.ctime.into_bound_py_any(py)?,
        float(m.atime, m.atime_nsec).into_bound_py_any(py)?,
        float(m.mtime, m.mtime_nsec).into_bound_py_any(py)?,
        float(m.ctime, m.ctime_nsec).into_bound_py_any(py)?,
        ns(m.atime, m.atime_nsec).into_bound_py_any(py)?,
        ns(m.mtime, m.mtime_nsec).into_bound_py_any(py)?,
        ns(m.ctime, m.ctime_nsec).into_bound_py_any(py)?,
        py.None().into_bound(py),
        m.blocks.into_bound_py_any(py)?,
        m.rdev.into_bound_py_any(py)?,
    ];
    class.bind(py).call1((pyo3::types::PyTuple::new(py, fields)?,))
}

pub enum Part {
    Chunk(ChunkBuf),
    Error(Error),
}

struct Chunks;

impl Items for Chunks {
    type Item = Part;

    fn chunk(&self, chunk: &mut Chunk<'_>) -> Part {
        Part::Chunk(chunk.take())
    }

    fn error(&self, error: Error) -> Part {
        Part::Error(error)
    }
}

/// The iterator `fnd_walk.scan` returns.
#[pyclass(module = "fnd_walk")]
pub struct ScanIter {
    stream: Option<Stream<Part>>,
    parts: VecDeque<Part>,
    current: Option<(ChunkBuf, usize)>,
    spelling: Spelling,
    onerror: Option<Py<PyAny>>,
}

#[pymethods]
impl ScanIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Entry>> {
        loop {
            if let Some((chunk, index)) = &mut self.current {
                if *index < chunk.len() {
                    let entry = chunk.get(*index);
                    *index += 1;
                    let mut path = Vec::with_capacity(chunk.prefix().len() + entry.name_bytes().len());
                    entry.write_path(&mut path);
                    return Ok(Some(Entry {
                        name_start: path.len() - entry.name_bytes().len(),
                        path: path.into(),
                        depth: entry.depth(),
                        file_type: entry.file_type(),
                        target_type: entry.target_type(),
                        ino: entry.ino(),
                        meta: entry.cached_metadata().copied(),
                        spelling: self.spelling,
                    }));
                }
                self.current = None;
            }
            match self.parts.pop_front() {
                Some(Part::Chunk(chunk)) => self.current = Some((chunk, 0)),
                Some(Part::Error(error)) => {
                    let err = walk_error(py, &error, self.spelling);
                    if error.depth() == 0 {
                        return Err(err);
                    }
                    report(py, self.onerror.as_ref(), err)?;
                }
                None => {
                    let Some(stream) = self.stream.as_mut() else {
                        return Ok(None);
                    };
                    match stream.next_batch(py)? {
                        Some(batch) => self.parts.extend(batch),
                        None => self.stream = None,
                    }
                }
            }
        }
    }

    /// Stop the walk now (it also stops when the iterator is collected).
    fn close(&mut self, py: Python<'_>) {
        self.parts.clear();
        self.current = None;
        if let Some(mut stream) = self.stream.take() {
            stream.stop(py);
        }
    }
}

/// Read the order's name.
pub fn order(name: &str) -> PyResult<Order> {
    match name {
        "parallel" => Ok(Order::Parallel),
        "bfs" => Ok(Order::BreadthFirst),
        "dfs" => Ok(Order::DepthFirst),
        _ => Err(PyValueError::new_err(format!(
            "order must be 'parallel', 'bfs' or 'dfs', not {name:?}"
        ))),
    }
}

/// `scan(top, *, hidden=True, ignore=False, follow=False, max_depth=None,
/// threads=0, order="parallel", stat=False, onerror=None)`.
#[pyfunction]
#[pyo3(signature = (top, *, hidden = true, ignore = false, follow = false, max_depth = None, threads = 0, order = "parallel", stat = false, onerror = None))]
#[allow(clippy::too_many_arguments)]
pub fn scan(
    top: &Bound<'_, PyAny>,
    hidden: bool,
    ignore: bool,
    follow: bool,
    max_depth: Option<usize>,
    threads: usize,
    order: &str,
    stat: bool,
    onerror: Option<Py<PyAny>>,
) -> PyResult<ScanIter> {
    let (root, spelling) = path_arg(top)?;
    let order = self::order(order)?;
    let builder = WalkBuilder::new(std::ffi::OsStr::from_bytes(&root))
        .min_depth(1)
        .max_depth(max_depth)
        .skip_hidden(!hidden)
        .git_ignore(ignore)
        .follow_links(follow)
        .metadata(stat)
        .order(order)
        .threads(threads);
    let items = Arc::new(Chunks);
    let stream = Stream::start(move |outlet| {
        builder.visit(|| Batcher::new(items.clone(), outlet.clone()), drop);
    })?;
    Ok(ScanIter {
        stream: Some(stream),
        parts: VecDeque::new(),
        current: None,
        spelling,
        onerror: onerror.filter(|o| !o.is_none(top.py())),
    })
}
