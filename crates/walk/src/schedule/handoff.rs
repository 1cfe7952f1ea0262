//! A pending directory as plain data, to be read by another process.
//!
//! In this process a pending directory is a name under an `Arc<Dir>` chain
//! that may hold an open descriptor. Another process has neither: it gets
//! what it needs to open the directory by path from the root it walks too
//! and to judge it as this process would (`-x`, loops, the filter's state
//! of its parent), and rebuilds a job from that.

use std::sync::Arc;

use rustix::io::Errno;

use crate::dir::{Dir, Pending};
use crate::error::Error;
use crate::filter::{ErasedState, MovedDir};
use crate::read::Job;
use crate::settings::Shared;

/// A pending directory as plain data: no pointer, no descriptor. Every
/// process of the walk has the same roots, in the same order.
///
/// Device numbers are per machine: a process on another node that mounts
/// the same file system may see another `st_dev` for it, and must map
/// `root_id`'s and `ancestors`' devices to its own (its own stat of the
/// root gives it) before [`into_job`](Self::into_job).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handoff {
    /// Which root of the walk the directory lies under.
    pub(crate) root: usize,
    /// The directory's full path as the walk spells it: the root as given,
    /// then `/name` per level.
    pub(crate) path: Vec<u8>,
    /// Its depth (a root is 0; its entries are one deeper).
    pub(crate) depth: usize,
    /// Opened following a final symlink: a root, or a link the walk follows.
    pub(crate) follow: bool,
    /// Device and inode of the root, as the walk found them when it opened
    /// it (zero for a root not opened yet): the directory is opened by path
    /// from the root, and only if the root's path still leads there; `-x`
    /// compares devices with it.
    pub(crate) root_id: (u64, u64),
    /// When the walk follows links: device and inode of each directory
    /// between the root and this one, the root's child first (`depth - 1`
    /// of them), for loop detection. Empty otherwise.
    pub(crate) ancestors: Vec<(u64, u64)>,
    /// The parent directory's filter state, as the walk's filter exported
    /// it (`DirHook::export_state`); `None` when the parent has none.
    /// A directory whose parent's state the filter cannot export is not
    /// handed over at all.
    pub(crate) filter_state: Option<Vec<u8>>,
}

impl Handoff {
    /// Describe `pending` for another process; give it back when it cannot
    /// travel (its parent has filter state the filter cannot export).
    pub(crate) fn export(pending: Pending, shared: &Shared) -> Result<Handoff, Pending> {
        let follow_links = shared.settings.follow_links;
        let parent = &pending.parent;
        let filter_state = match (&parent.hook_state, &shared.settings.hook) {
            (None, _) => None,
            (Some(state), Some(hook)) => {
                let moved = MovedDir {
                    parent_path: parent.path(),
                    parent_depth: parent.child_depth - 1,
                    name: &pending.name,
                    root: parent.root,
                    root_path: shared.root_path(parent.root),
                    follow_links,
                };
                match hook.export_state(state, &moved) {
                    Some(bytes) => Some(bytes),
                    None => return Err(pending),
                }
            }
            (Some(_), None) => return Err(pending),
        };
        let mut ancestors = Vec::new();
        if follow_links && !parent.is_root_parent() {
            if !parent.is_root() {
                ancestors.push((parent.dev, parent.ino));
            }
            ancestors.extend(parent.ancestors().filter(|d| !d.is_root).map(|d| (d.dev, d.ino)));
            ancestors.reverse();
        }
        Ok(Handoff {
            root: parent.root,
            path: pending.path(),
            depth: pending.depth(),
            follow: pending.follow,
            root_id: parent.root_id(),
            ancestors,
            filter_state,
        })
    }

    /// The job that reads the directory in this process: its parent chain
    /// rebuilt without descriptors, so it is opened by path from its root,
    /// and the parent's filter state imported. Refused, with why, when the
    /// description does not fit this walk (a root it does not have, a path
    /// that does not lie under that root, a chain of the wrong length,
    /// filter state the filter does not take): nothing from another
    /// process is trusted to be sound. A filter state that cannot be
    /// rebuilt because the file system said no (the parent vanished since)
    /// is the directory's error, reported as its reading would report it.
    pub(crate) fn into_job(self, shared: &Shared) -> Result<Job, String> {
        let root_path = shared.roots.get(self.root).ok_or("a root this walk does not have")?;
        if self.depth == 0 {
            if self.path != *root_path || self.filter_state.is_some() || !self.ancestors.is_empty() {
                return Err("a root that is not this walk's".into());
            }
            return Ok(Job::root(self.root, root_path));
        }
        let (dev, ino) = self.root_id;
        let mut root = Dir::new(root_path.clone(), 1, self.root, None, None, dev, ino, -1);
        let root_prefix_len = root.prefix.len();
        let not_under = "a directory that does not lie under its root";
        let below = self.path.strip_prefix(&*root.prefix).ok_or(not_under)?;
        let names: Vec<&[u8]> = below.split(|&b| b == b'/').collect();
        if names.len() != self.depth || !names.iter().all(|n| crate::entry::is_file_name(n)) {
            return Err(not_under.into());
        }
        if !self.ancestors.is_empty() && self.ancestors.len() != self.depth - 1 {
            return Err("a chain of ancestors of the wrong length".into());
        }
        let name = names[self.depth - 1];
        let state = match self.import_state(shared, name) {
            Ok(state) => state,
            Err(Refusal::Refused(why)) => return Err(why),
            Err(Refusal::Failed(errno)) => return Ok(Job::Failed(Box::new(Error::io(&self.path, self.depth, errno)))),
        };
        if self.depth == 1 {
            root.hook_state = state.clone();
        }
        // The directories between the root and this one: each one when
        // links are followed (loop detection looks at all of them), else
        // only the parent, whose path and depth the entries need.
        let path_to = |level: usize| {
            let len = root_prefix_len + names[..level].iter().map(|n| n.len() + 1).sum::<usize>() - 1;
            self.path[..len].to_vec()
        };
        let mut parent = Arc::new(root);
        let levels: Vec<(usize, (u64, u64))> = if self.ancestors.is_empty() {
            (self.depth > 1)
                .then_some((self.depth - 1, (0, 0)))
                .into_iter()
                .collect()
        } else {
            (1..self.depth).zip(self.ancestors.iter().copied()).collect()
        };
        for (level, (dev, ino)) in levels {
            let mut dir = Dir::new(
                path_to(level),
                level + 1,
                self.root,
                Some(root_prefix_len),
                Some(parent),
                dev,
                ino,
                -1,
            );
            if level == self.depth - 1 {
                dir.hook_state = state.clone();
            }
            parent = Arc::new(dir);
        }
        Ok(Job::Open(Pending::child(parent, name, self.follow, false)))
    }

    /// The parent's filter state, rebuilt by the walk's filter.
    fn import_state(&self, shared: &Shared, name: &[u8]) -> Result<Option<ErasedState>, Refusal> {
        let Some(bytes) = &self.filter_state else {
            return Ok(None);
        };
        let hook = shared
            .settings
            .hook
            .as_ref()
            .ok_or_else(|| Refusal::Refused("filter state for a walk without a hook".into()))?;
        let parent_len = self.path.len() - name.len() - 1;
        let moved = MovedDir {
            parent_path: &self.path[..parent_len],
            parent_depth: self.depth - 1,
            name,
            root: self.root,
            root_path: shared.root_path(self.root),
            follow_links: shared.settings.follow_links,
        };
        match hook.import_state(bytes, &moved) {
            Ok(state) => Ok(Some(state)),
            Err(e) => match e.downcast::<Errno>() {
                Ok(errno) => Err(Refusal::Failed(*errno)),
                Err(e) => Err(Refusal::Refused(format!("its filter state: {e}"))),
            },
        }
    }
}

/// Why a handoff does not become a job to read.
enum Refusal {
    /// It does not fit this walk.
    Refused(String),
    /// The file system refused what rebuilding its parent's state needed.
    Failed(Errno),
}

/// The bytes of a handoff, the one encoding every process of a walk
/// speaks: the walk's own, so that the transport (`fnd-mpi`) carries them
/// as an opaque work item and knows nothing of directories.
///
/// Fields in order: root (`u32`), path (a `u32` length, then the bytes),
/// depth (`u32`), follow (a byte, 0 or 1), the root's device and inode
/// (`u64`s), the number of ancestors (`u32`) and each one's device and
/// inode, then the filter state (a byte, 0 for none, or 1 then a `u32`
/// length and the bytes). Integers are little endian.
///
/// The bytes come from another process and are trusted in nothing:
/// decoding checks every length against what is left before it
/// allocates, refuses a NUL in the path, a flag that is neither 0 nor 1
/// and trailing bytes, and so each handoff has one encoding
/// (`decode(encode(h)) == h`, and `encode(decode(b)) == b` whenever
/// `decode(b)` succeeds). Whether the directory belongs to the walk (its
/// root, its names below the root, its chain) is
/// [`into_job`](Handoff::into_job)'s to judge. Fuzzed (`fuzz/`, `handoff`).
impl Handoff {
    #[cfg_attr(not(any(test, feature = "mpi")), allow(dead_code))] // for the MPI scheduler
    pub(crate) fn encode(&self) -> Vec<u8> {
        let state_len = self.filter_state.as_ref().map_or(0, |s| 4 + s.len());
        let mut buf =
            Vec::with_capacity(4 + 4 + self.path.len() + 4 + 1 + 16 + 4 + 16 * self.ancestors.len() + 1 + state_len);
        let u32_of = |n: usize, what| u32::try_from(n).expect(what);
        buf.extend_from_slice(&u32_of(self.root, "fewer than 2^32 roots").to_le_bytes());
        put_bytes(&mut buf, &self.path);
        buf.extend_from_slice(&u32_of(self.depth, "a depth below 2^32").to_le_bytes());
        buf.push(u8::from(self.follow));
        buf.extend_from_slice(&self.root_id.0.to_le_bytes());
        buf.extend_from_slice(&self.root_id.1.to_le_bytes());
        buf.extend_from_slice(&u32_of(self.ancestors.len(), "fewer than 2^32 ancestors").to_le_bytes());
        for &(dev, ino) in &self.ancestors {
            buf.extend_from_slice(&dev.to_le_bytes());
            buf.extend_from_slice(&ino.to_le_bytes());
        }
        match &self.filter_state {
            None => buf.push(0),
            Some(state) => {
                buf.push(1);
                put_bytes(&mut buf, state);
            }
        }
        buf
    }

    /// Reads what [`encode`](Handoff::encode) wrote (see above for what is
    /// checked).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Handoff, DecodeError> {
        let mut r = Fields { buf: bytes, at: 0 };
        let root = r.u32()? as usize;
        let path = r.bytes()?.to_vec();
        // The path as the sending walk spelt it (from the root given, so
        // `..` may be part of it): any bytes but NUL, which no path holds.
        if path.contains(&0) {
            return Err(r.error("a path with a NUL byte"));
        }
        let depth = r.u32()? as usize;
        let follow = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.error("follow flag neither 0 nor 1")),
        };
        let root_id = (r.u64()?, r.u64()?);
        let n = r.count(16)?;
        let mut ancestors = Vec::with_capacity(n);
        for _ in 0..n {
            ancestors.push((r.u64()?, r.u64()?));
        }
        let filter_state = match r.u8()? {
            0 => None,
            1 => Some(r.bytes()?.to_vec()),
            _ => return Err(r.error("filter state neither absent nor present")),
        };
        if r.at != bytes.len() {
            return Err(r.error("trailing bytes"));
        }
        Ok(Handoff {
            root,
            path,
            depth,
            follow,
            root_id,
            ancestors,
            filter_state,
        })
    }
}

/// A byte string: its length as a `u32`, then the bytes.
fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a field shorter than 4 GiB");
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(bytes);
}

/// Why bytes are not a handoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    /// What was wrong, in a few words.
    pub(crate) what: &'static str,
    /// The offset in the bytes where it was found.
    pub(crate) at: usize,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

/// The fields of a handoff's bytes, each checked against what is left.
struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn error(&self, what: &'static str) -> DecodeError {
        DecodeError { what, at: self.at }
    }

    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let field = self.buf[self.at..].first_chunk::<N>().ok_or_else(|| self.error(what))?;
        self.at += N;
        Ok(*field)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take::<1>("truncated byte")?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take("truncated u32").map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.take("truncated u64").map(u64::from_le_bytes)
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        let rest = &self.buf[self.at..];
        let field = rest
            .get(..len)
            .ok_or_else(|| self.error("byte string longer than the message"))?;
        self.at += len;
        Ok(field)
    }

    /// A count of things of `size` bytes each, checked against what is
    /// left, so that a corrupted count cannot make the decoder allocate
    /// more than the bytes could hold.
    fn count(&mut self, size: usize) -> Result<usize, DecodeError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(size) > self.buf.len() - self.at {
            return Err(self.error("count larger than the message could hold"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Handoff {
        Handoff {
            root: 2,
            path: b"a/\xffb".to_vec(),
            depth: 3,
            follow: true,
            root_id: (1, 2),
            ancestors: vec![(1, 2), (1, 7), (u64::MAX, 0)],
            filter_state: Some(b"\x01state".to_vec()),
        }
    }

    #[test]
    fn a_handoff_round_trips_and_damage_is_an_error() {
        let d = sample();
        let empty = Handoff {
            root: 0,
            path: Vec::new(),
            depth: 0,
            follow: false,
            root_id: (0, 0),
            ancestors: Vec::new(),
            filter_state: None,
        };
        for d in [
            d.clone(),
            Handoff {
                filter_state: None,
                ..d.clone()
            },
            Handoff {
                filter_state: Some(Vec::new()),
                ..d.clone()
            },
            empty,
        ] {
            let b = d.encode();
            assert_eq!(Handoff::decode(&b).unwrap(), d);
            for cut in 0..b.len() {
                assert!(Handoff::decode(&b[..cut]).is_err(), "{d:?} cut at {cut}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert_eq!(Handoff::decode(&longer).unwrap_err().what, "trailing bytes");
        }
    }

    #[test]
    fn nonsense_fields_are_refused() {
        let d = sample();
        let b = d.encode();
        let nul = Handoff {
            path: b"a/\0/b".to_vec(),
            ..d.clone()
        };
        assert_eq!(
            Handoff::decode(&nul.encode()).unwrap_err().what,
            "a path with a NUL byte"
        );
        let follow_at = 4 + 4 + d.path.len() + 4;
        let mut bad = b.clone();
        bad[follow_at] = 2;
        assert_eq!(Handoff::decode(&bad).unwrap_err().what, "follow flag neither 0 nor 1");
        let mut bad = b.clone();
        bad[follow_at + 1 + 16 + 4 + 16 * 3] = 2;
        assert_eq!(
            Handoff::decode(&bad).unwrap_err().what,
            "filter state neither absent nor present"
        );
        // 2^32-1 ancestors in a few bytes: refused before anything is allocated.
        let mut bad = b.clone();
        bad[follow_at + 1 + 16..][..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Handoff::decode(&bad).unwrap_err().what,
            "count larger than the message could hold"
        );
        // A path longer than the bytes.
        let mut bad = b.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Handoff::decode(&bad).unwrap_err().what,
            "byte string longer than the message"
        );
    }

    #[test]
    fn the_encoding_is_the_one_other_ranks_speak() {
        // The bytes of a fixed handoff: a change here breaks a job whose
        // ranks run different builds, and must be meant.
        let d = Handoff {
            root: 1,
            path: b"r/a".to_vec(),
            depth: 1,
            follow: false,
            root_id: (2, 3),
            ancestors: vec![(4, 5)],
            filter_state: Some(b"s".to_vec()),
        };
        let mut want = vec![1, 0, 0, 0, 3, 0, 0, 0, b'r', b'/', b'a', 1, 0, 0, 0, 0];
        for n in [2u64, 3] {
            want.extend_from_slice(&n.to_le_bytes());
        }
        want.extend_from_slice(&[1, 0, 0, 0]);
        for n in [4u64, 5] {
            want.extend_from_slice(&n.to_le_bytes());
        }
        want.extend_from_slice(&[1, 1, 0, 0, 0, b's']);
        assert_eq!(d.encode(), want);
    }
}
