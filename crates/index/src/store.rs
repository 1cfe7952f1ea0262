//! Where an index lives and how it is replaced: under
//! `$XDG_CACHE_HOME/fnd/` (or `~/.cache/fnd/`), one file per root named
//! after a hash of the root's real path, mode 0600 in a 0700 directory;
//! written to a temporary file beside it and renamed over the old one, so
//! a reader has the old index or the new one, never a mix. Read through a
//! memory map.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rustix::fs::{Mode, OFlags};

use crate::format::{checksum, FormatError, Index, IndexWriter};

/// The folder of the indexes: `$XDG_CACHE_HOME/fnd` or `~/.cache/fnd`.
pub fn cache_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| Path::new(v).is_absolute()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".cache"),
    };
    Some(base.join("fnd"))
}

/// The file of the index of `root` (a real path) in `dir`.
pub fn file_for(dir: &Path, root: &Path) -> PathBuf {
    let bytes = root.as_os_str().as_bytes();
    let mut name = format!("{:016x}", checksum(bytes)).into_bytes();
    name.extend_from_slice(b".fndidx");
    dir.join(OsString::from_vec(name))
}

/// Replace `file` with the index `writer` holds, written as it is made
/// (see [`IndexWriter::finish_to`]), and map what was written.
///
/// ```
/// use fnd_index::format::{IndexWriter, Stamp};
/// use fnd_index::store;
///
/// # let cache = tempfile::tempdir().unwrap();
/// let file = cache.path().join("fnd/src.fndidx");
/// let mut w = IndexWriter::new(b"/src", 0);
/// w.add_dir(Stamp::default());
/// let mapped = store::save(&file, &mut w).unwrap();
/// assert_eq!(mapped.index().dir_count(), 1);
/// ```
pub fn save(file: &Path, writer: &mut IndexWriter) -> Result<Mapped, OpenError> {
    let f = write_file(file, writer).map_err(OpenError::Io)?;
    // SAFETY: as in `from_file`.
    let map = unsafe { Mmap::map(&f) }.map_err(OpenError::Io)?;
    // Written just now from the writer's tables: read without checking
    // the file again (its checksum was 1.5 ms of a refresh of million).
    Index::reread(&map).map_err(OpenError::Format)?;
    Ok(Mapped { map })
}

/// Replace `file` with the index `writer` holds, written as it is made.
pub fn write_index(file: &Path, writer: &mut IndexWriter) -> io::Result<()> {
    write_file(file, writer).map(drop)
}

fn write_file(file: &Path, writer: &mut IndexWriter) -> io::Result<fs::File> {
    replace(file, |f| {
        let mut out = io::BufWriter::with_capacity(1 << 16, f);
        writer.finish_to(&mut out)?;
        out.flush()
    })
}

/// Replace `file` with what `fill` writes, atomically, creating its folder
/// (0700) if need be; the file written, open for reading.
fn replace(file: &Path, fill: impl FnOnce(&mut fs::File) -> io::Result<()>) -> io::Result<fs::File> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut tmp_name = file.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        // No fsync: readers see the file whole through the rename; after a
        // crash a torn file is refused by its checksum and rebuilt. An
        // fsync of 29 MB added a fifth to a build of a million entries.
        fill(&mut f)?;
        // The file replaced is freed when its last reference goes: held
        // here through the rename and let go on another thread, the query
        // goes on meanwhile (freeing 10.6 MB made the rename 6 ms of a
        // 170 ms refresh of million). `O_PATH`: opening never blocks.
        let old = rustix::fs::open(file, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty());
        fs::rename(&tmp, file)?;
        if let Ok(old) = old {
            // A thread that cannot start leaves the freeing here.
            let _ = std::thread::Builder::new().spawn(move || drop(old));
        }
        Ok(f)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// An index file, mapped.
pub struct Mapped {
    map: Mmap,
}

/// Why an index could not be opened.
#[derive(Debug)]
pub enum OpenError {
    Missing,
    Io(io::Error),
    Format(FormatError),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Missing => write!(f, "no index"),
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::Format(e) => write!(f, "{e}"),
        }
    }
}

impl Mapped {
    /// Map `file` and check it whole.
    pub fn open(file: &Path) -> Result<Mapped, OpenError> {
        let f = fs::File::open(file).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Io(e),
        })?;
        Mapped::from_file(&f)
    }

    fn from_file(f: &fs::File) -> Result<Mapped, OpenError> {
        // SAFETY: the file is only ever replaced by rename, never written
        // in place, so the mapped bytes do not change under us; a file
        // truncated by someone else would fault, as with any mapped file.
        let map = unsafe { Mmap::map(f) }.map_err(OpenError::Io)?;
        Index::parse(&map).map_err(OpenError::Format)?;
        Ok(Mapped { map })
    }

    /// The index (checked when opened).
    pub fn index(&self) -> Index<'_> {
        Index::reread(&self.map).expect("checked when opened")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Stamp;
    use fnd_walk::FileType;

    fn writer() -> IndexWriter {
        let mut w = IndexWriter::new(b"/r", 5);
        w.add_dir(Stamp::default());
        w.add_entry(b"a", FileType::File);
        w
    }

    #[test]
    fn a_saved_index_is_the_one_mapped_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache/fnd/x.fndidx");
        let mapped = save(&file, &mut writer()).unwrap();
        assert_eq!(&mapped.map[..], &writer().finish()[..]);
        assert_eq!(fs::read(&file).unwrap(), writer().finish());
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let folder = fs::metadata(file.parent().unwrap()).unwrap();
        assert_eq!(folder.permissions().mode() & 0o777, 0o700);
        assert_eq!(
            fs::read_dir(file.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn an_index_that_cannot_be_saved_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("plain"), "").unwrap();
        assert!(save(&dir.path().join("plain/x.fndidx"), &mut writer()).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
