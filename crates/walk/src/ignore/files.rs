//! Reading a directory's ignore files, relative to its descriptor, and
//! only those its listing says exist.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, Mode, OFlags};

/// Most bytes read of one ignore file: real ones are kilobytes, and a
/// sparse file of a terabyte must not be read whole.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// Files of one directory, looked up relative to its descriptor; names the
/// walk's listing says are absent are not tried at all.
pub(super) struct Lookup<'a> {
    pub(super) dir: BorrowedFd<'a>,
    pub(super) probes: &'a [Vec<u8>],
    pub(super) present: Option<&'a [bool]>,
}

impl Lookup<'_> {
    /// Might `name` (or, for a path, its first component) exist?
    fn may_exist(&self, name: &[u8]) -> bool {
        let first = name.split(|&b| b == b'/').next().unwrap_or(name);
        match (self.present, self.probes.iter().position(|p| p.as_slice() == first)) {
            (Some(present), Some(i)) => present[i],
            _ => true,
        }
    }

    /// Ignore files lie in trees other users control: only a regular file
    /// is read (a FIFO would block the walk forever, a link to `/dev/zero`
    /// would fill memory), never opened as a controlling terminal, and read
    /// up to [`MAX_IGNORE_FILE`] bytes.
    fn read(&self, name: &[u8]) -> Option<Vec<u8>> {
        if !self.may_exist(name) {
            return None;
        }
        let is_file = |st: &rustix::fs::Stat| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file();
        // Checked before opening too: opening a device can act on it.
        if !is_file(&rustix::fs::statat(self.dir, name, AtFlags::empty()).ok()?) {
            return None;
        }
        let fd = rustix::fs::openat(
            self.dir,
            name,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .ok()?;
        if !is_file(&rustix::fs::fstat(&fd).ok()?) {
            return None;
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(MAX_IGNORE_FILE)
            .read_to_end(&mut bytes)
            .ok()?;
        Some(bytes)
    }

    pub(super) fn exists(&self, name: &[u8]) -> bool {
        self.may_exist(name) && exists_at(self.dir, name)
    }
}

pub(super) fn exists_at(dir: BorrowedFd<'_>, name: &[u8]) -> bool {
    rustix::fs::statat(dir, name, AtFlags::empty()).is_ok()
}

/// Rules from the files `names` (in `dir`), patterns relative to `base`.
pub(super) fn rules_from(dir: &Lookup<'_>, names: &[&[u8]], base: &[u8]) -> Option<Gitignore> {
    let mut builder: Option<GitignoreBuilder> = None;
    for name in names {
        let Some(bytes) = dir.read(name) else {
            continue;
        };
        let b = builder.get_or_insert_with(|| GitignoreBuilder::new(OsStr::from_bytes(base)));
        let mut from = base.to_vec();
        from.push(b'/');
        from.extend_from_slice(name);
        let from = PathBuf::from(OsString::from_vec(from));
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in text.lines().enumerate() {
            // As git does, ignore a byte-order mark at the start of the file.
            let line = if i == 0 {
                line.trim_start_matches('\u{feff}')
            } else {
                line
            };
            // A malformed line is skipped; the rest of the file still applies.
            let _ = b.add_line(Some(from.clone()), line);
        }
    }
    builder.and_then(|b| b.build().ok()).filter(|g| !g.is_empty())
}
