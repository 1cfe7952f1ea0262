//! Filters on what an entry is rather than what it is called: type, size,
//! modification time, owner. Each stats the entry at most once, relative to
//! its directory, and only when some filter needs metadata. And which
//! names are hidden ([`is_hidden`]).

use std::cell::OnceCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fnd_walk::{FileType, Metadata, RawEntry};
use rustix::fs::{Access, AtFlags};

/// Whether a name is hidden without `-H`, as fd 10.5 decides: it starts
/// with `.` and does not end with one (`.foo.`, `...` and `.cfg./`, with
/// everything in it, show), a quirk of fd's ignore library that fnd
/// follows. The walk's ignore rules judge hidden names by the same rule.
pub use fnd_walk::ignore::is_hidden;

/// An entry being judged, with its metadata fetched on first use.
pub struct Candidate<'a, 'e> {
    pub entry: &'a RawEntry<'e>,
    /// Whether the walk follows symlinks (`-L`): types and metadata are then the target's.
    follow: bool,
    meta: OnceCell<Option<Metadata>>,
}

impl<'a, 'e> Candidate<'a, 'e> {
    pub fn new(entry: &'a RawEntry<'e>, follow: bool) -> Self {
        Candidate {
            entry,
            follow,
            meta: OnceCell::new(),
        }
    }

    /// The type fd judges by: the link's target's when following links
    /// (a dangling link stays a link).
    pub fn file_type(&self) -> FileType {
        if self.follow {
            self.entry.target_type
        } else {
            self.entry.file_type
        }
    }

    /// Metadata of the entry (of its target when following links).
    pub fn metadata(&self) -> Option<&Metadata> {
        self.meta
            .get_or_init(|| {
                let e = self.entry;
                let follow = self.follow && e.file_type == FileType::Symlink && e.target_type != FileType::Symlink;
                fnd_walk::meta::stat_at(e.dir_fd, e.name, follow).ok()
            })
            .as_ref()
    }

    fn stat_follow(&self) -> Option<Metadata> {
        fnd_walk::meta::stat_at(self.entry.dir_fd, self.entry.name, true).ok()
    }

    fn is_executable(&self) -> bool {
        rustix::fs::accessat(self.entry.dir_fd, self.entry.name, Access::EXEC_OK, AtFlags::EACCESS).is_ok()
    }

    fn is_empty(&self) -> bool {
        match self.file_type() {
            FileType::Dir => dir_is_empty(self.entry),
            FileType::File => self.metadata().is_some_and(|m| m.size == 0),
            _ => false,
        }
    }
}

/// A directory with no entries but `.` and `..` (an unreadable one is not empty).
fn dir_is_empty(entry: &RawEntry<'_>) -> bool {
    use rustix::fs::{Mode, OFlags};
    let Ok(fd) = rustix::fs::openat(
        entry.dir_fd,
        entry.name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1024];
    let mut dir = rustix::fs::RawDir::new(fd, &mut buf);
    while let Some(Ok(e)) = dir.next() {
        let name = e.file_name().to_bytes();
        if name != b"." && name != b".." {
            return false;
        }
    }
    true
}

/// The values of `-t/--type` (parsed by clap, as fd spells them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TypeArg {
    #[value(alias = "f")]
    File,
    #[value(alias = "d", alias = "dir")]
    Directory,
    #[value(alias = "l")]
    Symlink,
    #[value(alias = "b")]
    BlockDevice,
    #[value(alias = "c")]
    CharDevice,
    #[value(alias = "x")]
    Executable,
    #[value(alias = "e")]
    Empty,
    #[value(alias = "s")]
    Socket,
    #[value(alias = "p")]
    Pipe,
}

/// `-t/--type`, as fd reads it: the listed types are allowed (OR); `x` and
/// `e` narrow further; `x` alone means executable files, `e` alone empty
/// files and directories.
#[derive(Clone, Debug, Default)]
pub struct TypeFilter {
    file: bool,
    dir: bool,
    symlink: bool,
    block: bool,
    char: bool,
    socket: bool,
    pipe: bool,
    executable_only: bool,
    empty_only: bool,
}

impl TypeFilter {
    pub fn new(types: &[TypeArg]) -> Option<Self> {
        if types.is_empty() {
            return None;
        }
        let mut t = TypeFilter::default();
        for ty in types {
            match ty {
                TypeArg::File => t.file = true,
                TypeArg::Directory => t.dir = true,
                TypeArg::Symlink => t.symlink = true,
                TypeArg::BlockDevice => t.block = true,
                TypeArg::CharDevice => t.char = true,
                TypeArg::Socket => t.socket = true,
                TypeArg::Pipe => t.pipe = true,
                TypeArg::Executable => {
                    t.executable_only = true;
                    t.file = true;
                }
                TypeArg::Empty => t.empty_only = true,
            }
        }
        if t.empty_only && !(t.file || t.dir) {
            t.file = true;
            t.dir = true;
        }
        Some(t)
    }

    pub fn matches(&self, c: &Candidate<'_, '_>) -> bool {
        let allowed = match c.file_type() {
            FileType::File => self.file,
            FileType::Dir => self.dir,
            FileType::Symlink => self.symlink,
            FileType::BlockDevice => self.block,
            FileType::CharDevice => self.char,
            FileType::Socket => self.socket,
            FileType::Fifo => self.pipe,
            FileType::Unknown => false,
        };
        allowed && (!self.executable_only || c.is_executable()) && (!self.empty_only || c.is_empty())
    }
}

/// One `-S/--size` limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeLimit {
    Min(u64),
    Max(u64),
    Equals(u64),
}

impl SizeLimit {
    /// `[+-]NUM UNIT`, unit one of b, k, m, g, t, ki, mi, gi, ti (optionally
    /// followed by `b`), case-insensitive.
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::parse_opt(s).ok_or_else(|| format!("'{s}' is not a valid size constraint. See 'fnd --help'."))
    }

    fn parse_opt(s: &str) -> Option<Self> {
        let (kind, rest) = match s.as_bytes().first()? {
            b'+' => (b'+', &s[1..]),
            b'-' => (b'-', &s[1..]),
            _ => (b'=', s),
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let quantity: u64 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].to_ascii_lowercase();
        let multiplier: u64 = match unit.as_str() {
            "b" => 1,
            "k" | "kb" => 1000,
            "m" | "mb" => 1000u64.pow(2),
            "g" | "gb" => 1000u64.pow(3),
            "t" | "tb" => 1000u64.pow(4),
            "ki" | "kib" => 1 << 10,
            "mi" | "mib" => 1 << 20,
            "gi" | "gib" => 1 << 30,
            "ti" | "tib" => 1 << 40,
            _ => return None,
        };
        let size = quantity.checked_mul(multiplier)?;
        Some(match kind {
            b'+' => SizeLimit::Min(size),
            b'-' => SizeLimit::Max(size),
            _ => SizeLimit::Equals(size),
        })
    }

    pub fn allows(self, size: u64) -> bool {
        match self {
            SizeLimit::Min(l) => size >= l,
            SizeLimit::Max(l) => size <= l,
            SizeLimit::Equals(l) => size == l,
        }
    }
}

/// `--changed-within` / `--changed-before`: a bound on the modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeLimit {
    After(SystemTime),
    Before(SystemTime),
}

impl TimeLimit {
    /// A duration back from now (`10h`, `2weeks`, `1d 2h`), an RFC 3339
    /// timestamp, a local `YYYY-MM-DD[ HH:MM:SS]`, or `@unix-seconds`.
    pub fn parse_time(s: &str) -> Option<SystemTime> {
        use jiff::{civil::DateTime, tz::TimeZone, Span, Timestamp, Zoned};
        if let Ok(span) = s.parse::<Span>() {
            Some(Zoned::now().checked_sub(span).ok()?.into())
        } else if let Ok(ts) = s.parse::<Timestamp>() {
            Some(ts.into())
        } else if let Ok(dt) = s.parse::<DateTime>() {
            Some(TimeZone::system().to_ambiguous_zoned(dt).later().ok()?.into())
        } else {
            let secs: u64 = s.strip_prefix('@')?.parse().ok()?;
            UNIX_EPOCH.checked_add(Duration::from_secs(secs))
        }
    }

    pub fn allows(self, t: SystemTime) -> bool {
        match self {
            TimeLimit::After(limit) => t > limit,
            TimeLimit::Before(limit) => t < limit,
        }
    }
}

fn mtime(m: &Metadata) -> SystemTime {
    let secs = Duration::from_secs(m.mtime.unsigned_abs());
    let nanos = Duration::from_nanos(u64::from(m.mtime_nsec));
    let time = if m.mtime >= 0 {
        UNIX_EPOCH.checked_add(secs).and_then(|t| t.checked_add(nanos))
    } else {
        UNIX_EPOCH.checked_sub(secs).and_then(|t| t.checked_add(nanos))
    };
    // Only i64::MIN seconds (tmpfs keeps any time) is out of reach: a
    // second later is as far before any limit.
    time.unwrap_or_else(|| UNIX_EPOCH - Duration::from_secs(i64::MAX as u64))
}

/// One side of `--owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdCheck {
    Any,
    Is(u32),
    IsNot(u32),
}

impl IdCheck {
    fn allows(self, id: u32) -> bool {
        match self {
            IdCheck::Any => true,
            IdCheck::Is(x) => id == x,
            IdCheck::IsNot(x) => id != x,
        }
    }

    fn parse(s: Option<&str>, lookup: impl Fn(&str) -> Result<u32, String>) -> Result<Self, String> {
        let (s, equal) = match s {
            None | Some("") => return Ok(IdCheck::Any),
            Some(s) => match s.strip_prefix('!') {
                Some(rest) => (rest, false),
                None => (s, true),
            },
        };
        let id = match s.parse() {
            Ok(id) => id,
            Err(_) => lookup(s)?,
        };
        Ok(if equal { IdCheck::Is(id) } else { IdCheck::IsNot(id) })
    }
}

/// The id a user or group name resolved to (`what` names which, for the error).
fn by_name(name: &str, what: &str, found: nix::Result<Option<u32>>) -> Result<u32, String> {
    found
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("'{name}' is not a recognized {what} name"))
}

/// `-o/--owner [user|uid][:group|gid]`, each side negatable with `!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerFilter {
    uid: IdCheck,
    gid: IdCheck,
}

impl OwnerFilter {
    pub fn parse(input: &str) -> Result<Self, String> {
        let mut it = input.split(':');
        let (user, group) = (it.next(), it.next());
        if it.next().is_some() {
            return Err(format!(
                "more than one ':' present in owner string '{input}'. See 'fnd --help'."
            ));
        }
        let uid = IdCheck::parse(user, |name| {
            by_name(
                name,
                "user",
                nix::unistd::User::from_name(name).map(|u| u.map(|u| u.uid.as_raw())),
            )
        })?;
        let gid = IdCheck::parse(group, |name| {
            by_name(
                name,
                "group",
                nix::unistd::Group::from_name(name).map(|g| g.map(|g| g.gid.as_raw())),
            )
        })?;
        Ok(OwnerFilter { uid, gid })
    }

    /// `None` when it checks nothing (`--owner :`).
    pub fn active(self) -> Option<Self> {
        (self.uid != IdCheck::Any || self.gid != IdCheck::Any).then_some(self)
    }

    fn allows(&self, m: &Metadata) -> bool {
        self.uid.allows(m.uid) && self.gid.allows(m.gid)
    }
}

/// The filters that need more than the entry's name, applied in fd's order.
#[derive(Clone, Debug, Default)]
pub struct EntryFilters {
    pub types: Option<TypeFilter>,
    pub owner: Option<OwnerFilter>,
    pub sizes: Vec<SizeLimit>,
    pub times: Vec<TimeLimit>,
}

impl EntryFilters {
    pub fn is_empty(&self) -> bool {
        self.types.is_none() && self.owner.is_none() && self.sizes.is_empty() && self.times.is_empty()
    }

    /// Whether judging an entry may touch the file system (a stat, an
    /// access check, a listing), not only its listed type.
    pub fn reads_entries(&self) -> bool {
        self.owner.is_some()
            || !self.sizes.is_empty()
            || !self.times.is_empty()
            || self.types.as_ref().is_some_and(|t| t.executable_only || t.empty_only)
    }

    pub fn matches(&self, c: &Candidate<'_, '_>) -> bool {
        if let Some(types) = &self.types {
            if !types.matches(c) {
                return false;
            }
        }
        if let Some(owner) = &self.owner {
            if !c.metadata().is_some_and(|m| owner.allows(m)) {
                return false;
            }
        }
        if !self.sizes.is_empty() {
            // fd asks "is it a file?" following links, then reads the size of
            // the entry itself (the link's own size, without -L).
            let is_file = match c.file_type() {
                FileType::File => true,
                FileType::Symlink if !c.follow => c.stat_follow().is_some_and(|m| m.file_type() == FileType::File),
                _ => false,
            };
            if !is_file
                || !c
                    .metadata()
                    .is_some_and(|m| self.sizes.iter().all(|s| s.allows(m.size)))
            {
                return false;
            }
        }
        if !self.times.is_empty()
            && !c
                .metadata()
                .is_some_and(|m| self.times.iter().all(|t| t.allows(mtime(m))))
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::is_hidden;

    #[test]
    fn hidden_as_fd_hides() {
        for name in [&b".hidden"[..], b".a.b", b".x\xff", b".git"] {
            assert!(is_hidden(name), "{}", String::from_utf8_lossy(name));
        }
        for name in [&b".foo."[..], b"...", b".cfg.", b"..", b"a.", b"plain", b"a.b", b""] {
            assert!(!is_hidden(name), "{}", String::from_utf8_lossy(name));
        }
    }

    use super::*;

    fn modified_at(mtime: i64, mtime_nsec: u32) -> Metadata {
        let (atime, atime_nsec, ctime, ctime_nsec) = (0, 0, 0, 0);
        let (dev, ino, mode, nlink, uid, gid, rdev, size, blocks) = (0, 0, 0o100644, 1, 0, 0, 0, 0, 0);
        Metadata {
            dev,
            ino,
            mode,
            nlink,
            uid,
            gid,
            rdev,
            size,
            blocks,
            atime,
            atime_nsec,
            mtime,
            mtime_nsec,
            ctime,
            ctime_nsec,
        }
    }

    /// tmpfs stores any 64-bit time; none may panic.
    #[test]
    fn times_at_the_ends_of_the_range_compare() {
        let now = SystemTime::now();
        let (after, before) = (TimeLimit::After(now), TimeLimit::Before(now));
        for (secs, nsec, future) in [
            (i64::MAX, 999_999_999, true),
            (i64::MIN, 999_999_999, false),
            (i64::MIN + 1, 0, false),
            (-1, 5, false),
        ] {
            let t = mtime(&modified_at(secs, nsec));
            assert_eq!((after.allows(t), before.allows(t)), (future, !future), "{secs}.{nsec}");
        }
    }

    #[test]
    fn sizes_parse_like_fd() {
        assert_eq!(SizeLimit::parse("+1k"), Ok(SizeLimit::Min(1000)));
        assert_eq!(SizeLimit::parse("-1KiB"), Ok(SizeLimit::Max(1024)));
        assert_eq!(SizeLimit::parse("10b"), Ok(SizeLimit::Equals(10)));
        assert_eq!(SizeLimit::parse("+2Mi"), Ok(SizeLimit::Min(2 << 20)));
        for bad in ["+18", "+g", "9999", "+1bb", "+1bib", "$10M", "+50a", ""] {
            assert!(SizeLimit::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn owner_parses_like_fd() {
        assert_eq!(
            OwnerFilter::parse("5:!8"),
            Ok(OwnerFilter {
                uid: IdCheck::Is(5),
                gid: IdCheck::IsNot(8)
            })
        );
        assert_eq!(OwnerFilter::parse(":").unwrap().active(), None);
        assert!(OwnerFilter::parse("3:5:").is_err());
        assert_eq!(OwnerFilter::parse("root").unwrap().uid, IdCheck::Is(0));
    }

    #[test]
    fn times_parse() {
        assert!(TimeLimit::parse_time("2weeks").is_some());
        assert!(TimeLimit::parse_time("10h").is_some());
        assert!(TimeLimit::parse_time("2018-10-27 10:00:00").is_some());
        assert!(TimeLimit::parse_time("2018-10-27").is_some());
        assert!(TimeLimit::parse_time("@1700000000").is_some());
        assert!(TimeLimit::parse_time("1700000000").is_none());
        assert!(TimeLimit::parse_time("yesterday-ish").is_none());
    }
}
