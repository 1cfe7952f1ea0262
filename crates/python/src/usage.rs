//! `fnd_walk.disk_usage`: fdu's total for a tree, each file with several
//! hard links counted once, from a walk that stats every entry once on its
//! own threads. What an entry counts for is fdu's rule (`fdu::usage`), and
//! which inodes were counted, fdu's record (`fdu::hardlinks::Links`).

use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use fdu::hardlinks::Links;
use fdu::settings::Measure;
use fdu::usage::Usage;
use fnd_walk::{Chunk, Error, WalkBuilder};
use pyo3::prelude::*;

use crate::errors::{report, walk_error};
use crate::stream::{Batcher, Items, Stream};
use crate::text::path_arg;

pub enum Part {
    Amount(u64),
    Error(Error),
}

struct Amounts {
    measure: Measure,
    links: Links,
}

impl Items for Amounts {
    type Item = Part;

    fn chunk(&self, chunk: &mut Chunk<'_>) -> Part {
        let mut amount = 0;
        for entry in chunk.iter() {
            let Some(m) = entry.cached_metadata() else {
                continue; // vanished before its stat
            };
            if !m.is_dir() && m.nlink > 1 && !self.links.first(m.dev, m.ino) {
                continue;
            }
            amount += Usage::of(m, self.measure, None).amount;
        }
        Part::Amount(amount)
    }

    fn error(&self, error: Error) -> Part {
        Part::Error(error)
    }
}

/// `disk_usage(top, *, apparent=False, inodes=False, one_file_system=False,
/// threads=0, onerror=None)`: what `du -s` (`--apparent-size -b`,
/// `--inodes`) says for `top`, in bytes (or inodes).
#[pyfunction]
#[pyo3(signature = (top, *, apparent = false, inodes = false, one_file_system = false, threads = 0, onerror = None))]
pub fn disk_usage(
    py: Python<'_>,
    top: &Bound<'_, PyAny>,
    apparent: bool,
    inodes: bool,
    one_file_system: bool,
    threads: usize,
    onerror: Option<Py<PyAny>>,
) -> PyResult<u64> {
    let (root, spelling) = path_arg(top)?;
    let measure = match (inodes, apparent) {
        (true, _) => Measure::Inodes,
        (false, true) => Measure::Apparent,
        (false, false) => Measure::Disk,
    };
    let builder = WalkBuilder::new(std::ffi::OsStr::from_bytes(&root))
        .metadata(true)
        .same_file_system(one_file_system)
        .threads(threads);
    let items = Arc::new(Amounts {
        measure,
        links: Links::default(),
    });
    let mut stream = Stream::start(move |outlet| {
        builder.visit(|| Batcher::new(items.clone(), outlet.clone()), drop);
    })?;
    let onerror = onerror.filter(|o| !o.is_none(py));
    let mut total = 0;
    while let Some(batch) = stream.next_batch(py)? {
        for part in batch {
            match part {
                Part::Amount(amount) => total += amount,
                Part::Error(error) => {
                    let err = walk_error(py, &error, spelling);
                    if error.depth() == 0 {
                        return Err(err);
                    }
                    report(py, onerror.as_ref(), err)?;
                }
            }
        }
    }
    Ok(total)
}
