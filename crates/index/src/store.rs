//! Where an index lives and how it is replaced: under
//! `$XDG_CACHE_HOME/fnd/` (or `~/.cache/fnd/`), one file per root named
//! after a hash of the root's real path, mode 0600 in a 0700 directory;
//! written to a temporary file beside it and renamed over the old one, so
//! a reader has the old index or the new one, never a mix.
//!
//! An index is read whole into memory, checked there and answered from
//! there: a query sees the bytes it checked, whatever happens to the file
//! meanwhile (mapped, a file rewritten in place under a query faulted it,
//! or fed it names never checked). And it is read only from a file that
//! its owner's folder keeps safe from other users (see [`Loaded::open`]).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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
/// (see [`IndexWriter::finish_to`]), and load what was written; when it
/// cannot be written, the index made in memory, so a query answers all
/// the same.
///
/// ```
/// use fnd_index::format::{IndexWriter, Stamp};
/// use fnd_index::store;
///
/// # let cache = tempfile::tempdir().unwrap();
/// let file = cache.path().join("fnd/src.fndidx");
/// let mut w = IndexWriter::new(b"/src", 0);
/// w.add_dir(Stamp::default());
/// let loaded = store::save(&file, w).unwrap();
/// assert_eq!(loaded.index().dir_count(), 1);
/// ```
pub fn save(file: &Path, mut writer: IndexWriter) -> Result<Loaded, OpenError> {
    match write_file(file, &mut writer) {
        Ok(f) => {
            // The writer's tables go before the file is read back (with
            // both, a refresh of million peaked at 41 MB, 30 without). It
            // is checked again, as read: the file is a path anyone with
            // our rights can rewrite before it is read.
            drop(writer);
            Loaded::read(&f, f.metadata().map_or(0, |m| m.len()))
        }
        Err(_) => Ok(Loaded::made(writer.finish())),
    }
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

/// An index, read whole into memory and checked.
pub struct Loaded {
    bytes: Bytes,
}

/// Where a [`Loaded`] index's bytes are: read from a file into memory of
/// their own (how many), or made here.
enum Bytes {
    Read(memmap2::Mmap, usize),
    Made(Vec<u8>),
}

/// Why an index could not be opened.
#[derive(Debug)]
pub enum OpenError {
    Missing,
    Io(io::Error),
    Format(FormatError),
    /// Another user could have written it: what is wrong, and the fix.
    Untrusted(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Missing => write!(f, "no index"),
            OpenError::Io(e) => write!(f, "{e}"),
            OpenError::Format(e) => write!(f, "{e}"),
            OpenError::Untrusted(why) => write!(f, "{why}"),
        }
    }
}

/// Whether a file or folder with this owner and mode can only have been
/// written by this user or root (`ssh` asks the same of its keys' files):
/// owned by one of them and writable by no one else, or for a folder,
/// sticky (as /tmp: no one else can replace what is ours in it). An
/// error naming the fix when not.
fn trusted(path: &Path, st: &rustix::fs::Stat, folder: bool) -> Result<(), OpenError> {
    let me = rustix::process::geteuid().as_raw();
    let what = if folder { "the folder of index" } else { "index" };
    if st.st_uid != me && st.st_uid != 0 {
        let fix = if folder {
            "keep the index in a folder of yours"
        } else {
            "remove it and build one of yours with --build-index"
        };
        return Err(OpenError::Untrusted(format!(
            "{what} '{}' belongs to another user (uid {}), not trusted: {fix}",
            path.display(),
            st.st_uid
        )));
    }
    let sticky = folder && st.st_mode & 0o1000 != 0;
    if st.st_mode & 0o022 != 0 && !sticky {
        return Err(OpenError::Untrusted(format!(
            "{what} '{}' is writable by other users, not trusted: chmod go-w '{}'",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

impl Loaded {
    /// Read `file` and check it whole. It is read only when its folder and
    /// itself are trusted (see `trusted`): both are opened, then
    /// checked through their descriptors, so what is checked is what is
    /// read (the folder as opened holds only what a trusted user put in it).
    pub fn open(file: &Path) -> Result<Loaded, OpenError> {
        let missing = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound => OpenError::Missing,
            _ => OpenError::Io(e),
        };
        let real = fs::canonicalize(file).map_err(missing)?;
        let (Some(folder), Some(name)) = (real.parent(), real.file_name()) else {
            return Err(OpenError::Io(io::Error::from(io::ErrorKind::IsADirectory)));
        };
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        // `O_PATH`: a folder one may enter but not list holds indexes too.
        let dir = rustix::fs::open(
            folder,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| missing(e.into()))?;
        trusted(
            folder,
            &rustix::fs::fstat(&dir).map_err(|e| OpenError::Io(e.into()))?,
            true,
        )?;
        // Not a FIFO's writer waited for: `O_NONBLOCK` (a plain file's
        // reads do not heed it).
        let fd = rustix::fs::openat(&dir, name, flags | OFlags::NOFOLLOW | OFlags::NONBLOCK, Mode::empty())
            .map_err(|e| missing(e.into()))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| OpenError::Io(e.into()))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(OpenError::Io(io::Error::other("not a regular file")));
        }
        trusted(&real, &st, false)?;
        Loaded::read(&fs::File::from(fd), st.st_size as u64)
    }

    /// Read `f` whole from its start (`size`: what it holds, as far as
    /// is known) and check it. Read, not mapped: a file truncated under a
    /// mapping faults its reader (SIGBUS), and one rewritten in place
    /// changes bytes already checked. The copy costs a stale-ok query of
    /// a rare name in million (index 7.7 MB) 1.6 ms of CPU over the
    /// mapped file, 1.2x; a checked query, within noise (BENCHMARKS.md).
    fn read(f: &fs::File, size: u64) -> Result<Loaded, OpenError> {
        // One more byte than it holds: a file that grew meanwhile is seen
        // as one (trailing bytes), not read without end.
        let room = usize::try_from(size.saturating_add(1)).map_err(|e| OpenError::Io(io::Error::other(e)))?;
        // Into memory of its own, in pages of 2 MiB where the system gives
        // them: in 4 KiB pages, the faults of a read of million's index
        // (7.7 MB) doubled the time of a query.
        let mut buf = memmap2::MmapOptions::new()
            .len(room)
            .map_anon()
            .map_err(OpenError::Io)?;
        let _ = buf.advise(memmap2::Advice::HugePage);
        let mut len = 0;
        while len < room {
            match rustix::io::pread(f, &mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(OpenError::Io(e.into())),
            }
        }
        let buf = buf.make_read_only().map_err(OpenError::Io)?;
        Index::parse(&buf[..len]).map_err(OpenError::Format)?;
        Ok(Loaded {
            bytes: Bytes::Read(buf, len),
        })
    }

    /// An index made here, in memory: its bytes, as a writer made them.
    fn made(bytes: Vec<u8>) -> Loaded {
        Loaded {
            bytes: Bytes::Made(bytes),
        }
    }

    /// The index (checked when read).
    pub fn index(&self) -> Index<'_> {
        let bytes = match &self.bytes {
            Bytes::Read(buf, len) => &buf[..*len],
            Bytes::Made(bytes) => bytes,
        };
        Index::reread(bytes).expect("checked when read")
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
    fn a_saved_index_is_the_one_loaded_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache/fnd/x.fndidx");
        let loaded = save(&file, writer()).unwrap();
        assert_eq!(loaded.index().root(), b"/r");
        let Bytes::Read(buf, len) = &loaded.bytes else {
            panic!("not read back")
        };
        assert_eq!(&buf[..*len], writer().finish());
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

    /// A file or folder others may write is refused, naming the fix; a
    /// sticky folder (as /tmp) is not.
    #[test]
    fn an_index_others_could_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let set = |p: &Path, mode| fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("f");
        let file = folder.join("x.fndidx");
        write_index(&file, &mut writer()).unwrap();
        assert!(Loaded::open(&file).is_ok());
        set(&file, 0o620);
        let e = Loaded::open(&file).err().unwrap().to_string();
        assert!(e.contains("writable by other users") && e.contains("chmod go-w"), "{e}");
        set(&file, 0o600);
        set(&folder, 0o777);
        let e = Loaded::open(&file).err().unwrap().to_string();
        assert!(e.starts_with("the folder of index"), "{e}");
        set(&folder, 0o1777);
        assert!(Loaded::open(&file).is_ok());
    }

    #[test]
    fn an_index_that_cannot_be_saved_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("plain"), "").unwrap();
        assert!(write_index(&dir.path().join("plain/x.fndidx"), &mut writer()).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
