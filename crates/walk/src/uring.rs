//! Bulk metadata through io_uring: a chunk's stats submitted together.
//!
//! `getdents64` has no io_uring operation, but the stats of a chunk do:
//! `IORING_OP_STATX` relative to the directory's descriptor, one per entry,
//! all submitted at once. On a cold cache the kernel then has the whole
//! chunk's inode reads in flight instead of one per blocked thread.
//!
//! The kernel always hands a statx to one of its io-wq threads, so on a hot
//! cache every stat pays a thread hop that an `fstatat` does not: see
//! [`IoUring`] for when the ring is used, and the figures behind that
//! choice.
//!
//! Anything that goes wrong falls back to `fstatat`, never to an error of
//! its own: no io_uring in the kernel (ENOSYS), a seccomp filter (EPERM),
//! `kernel.io_uring_disabled`, no STATX operation, a failed submission; and
//! an entry whose statx fails in any way is stat-ed again by `fstatat`, so
//! what it reports (a vanished entry's ENOENT, say) is what it always did.

#[cfg(feature = "io-uring")]
use std::ffi::CStr;
#[cfg(feature = "io-uring")]
use std::mem::MaybeUninit;
#[cfg(feature = "io-uring")]
use std::os::fd::AsRawFd;
use std::os::fd::BorrowedFd;
#[cfg(feature = "io-uring")]
use std::sync::OnceLock;

#[cfg(feature = "io-uring")]
use io_uring::{opcode, types, IoUring as Ring};

use crate::io::Probe;
use crate::meta::Metadata;

/// When a walk's bulk metadata ([`WalkBuilder::metadata`](crate::WalkBuilder::metadata))
/// goes through io_uring; see [`WalkBuilder::io_uring`](crate::WalkBuilder::io_uring).
///
/// The default is `Never` because io_uring lost every case measured (kernel
/// 6.18, ext4 on a virtio disk, 2 busy cores; `fdu -s` built with each
/// setting; wall time with io_uring over wall time with `fstatat`, the mean
/// of 7 to 15 runs hot, the median of 3 to 5 cold):
///
/// | tree | hot | cold (caches dropped) |
/// |---|---|---|
/// | src (60k entries, 10k dirs) | 1.11x | 1.16x–1.19x |
/// | million (944k entries, 140k dirs) | 1.34x | 1.09x |
/// | bigdir (1M files in one dir) | 1.18x | 1.10x |
/// | src through a FUSE mount, 200 µs a request | | 1.27x |
///
/// Hot, each statx pays a hop to a kernel worker thread. Cold, the walk is
/// bound by the kernel's CPU time to read and set up inodes (a cold `fdu -s`
/// of million spends 10.9 s of system time in 13 s on 2 cores), not by
/// requests in flight, which the pool of blocking workers (`crate::io`)
/// already raises; directories average 5 to 6 entries, so a chunk puts few
/// stats in flight at once. FUSE serializes lookups within a directory
/// unless the server asks for parallel ones. `WhenWaiting` (which switches
/// a thread once its stats are seen to wait) costs nothing hot (1.0x) and
/// gains nothing cold: 1.09x on src (median of 9 runs) and 1.11x on million
/// (of 3), run interleaved with `fstatat` builds, diskus, pdu and du. Where
/// lookups do run in parallel and are slow (a network file system with big
/// directories), `WhenWaiting` is the one to try.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoUring {
    /// One `fstatat` per entry, always.
    #[default]
    Never,
    /// `fstatat` until a walking thread sees its stats wait on the device
    /// (a cold cache, a slow file system), io_uring from then on.
    WhenWaiting,
    /// io_uring for every chunk, when the kernel allows it.
    Always,
}

/// Submission queue entries per ring. A statx runs on one of the kernel's
/// bounded io-wq threads, of which a ring gets at most four per CPU: a
/// deeper queue only waits in line.
#[cfg(feature = "io-uring")]
const RING_ENTRIES: u32 = 64;

/// Whether this process may use io_uring statx at all: probed once.
#[cfg(feature = "io-uring")]
fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let Ok(ring) = Ring::new(2) else { return false };
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe).is_ok() && probe.is_supported(opcode::Statx::CODE)
    })
}

#[cfg(feature = "io-uring")]
enum State {
    /// Not needed yet (or not yet judged worth it).
    Unused,
    /// Boxed: a ring is large, and most walks never make one.
    Ready(Box<Ring>),
    /// Unavailable or broken: `fstatat` from now on.
    Off,
}

/// One walking thread's bulk stats: its ring (made on first use) and the
/// buffers the kernel writes into.
pub(crate) struct BulkStat {
    mode: IoUring,
    #[cfg(feature = "io-uring")]
    state: State,
    /// Whether this thread's stats wait on I/O (`WhenWaiting` only).
    probe: Probe,
    /// The chunk's names, each followed by a NUL, as statx wants them.
    #[cfg(feature = "io-uring")]
    names: Vec<u8>,
    #[cfg(feature = "io-uring")]
    bufs: Vec<MaybeUninit<libc::statx>>,
    /// Each entry's statx result; `PENDING` until it completes.
    #[cfg(feature = "io-uring")]
    results: Vec<i32>,
}

/// A result no completion carries (they are 0 or a negated errno).
#[cfg(feature = "io-uring")]
const PENDING: i32 = i32::MIN;

impl BulkStat {
    pub(crate) fn new(mode: IoUring) -> Self {
        BulkStat {
            mode,
            #[cfg(feature = "io-uring")]
            state: State::Unused,
            probe: Probe::new(mode == IoUring::WhenWaiting),
            #[cfg(feature = "io-uring")]
            names: Vec::new(),
            #[cfg(feature = "io-uring")]
            bufs: Vec::new(),
            #[cfg(feature = "io-uring")]
            results: Vec::new(),
        }
    }

    /// Stat every name relative to `dir` into `out` (cleared first): one
    /// entry per name, in order, `None` where the entry cannot be stat-ed
    /// (its own error is then what a stat of it returns).
    pub(crate) fn stat_all<'a>(
        &mut self,
        dir: BorrowedFd<'_>,
        follow: bool,
        names: impl Iterator<Item = &'a [u8]> + Clone,
        out: &mut Vec<Option<Metadata>>,
    ) {
        out.clear();
        #[cfg(feature = "io-uring")]
        if self.wants_ring() && self.stat_through_ring(dir, follow, names.clone(), out) {
            return;
        }
        self.probe.start();
        out.extend(names.map(|name| crate::meta::stat_entry(dir, name, follow)));
        if self.probe.finish() {
            // These stats wait on the device: from now on they go out together.
            self.mode = IoUring::Always;
            self.probe.disable();
        }
    }

    /// `stat_all` through the ring; false, with nothing done, without one.
    #[cfg(feature = "io-uring")]
    fn stat_through_ring<'a>(
        &mut self,
        dir: BorrowedFd<'_>,
        follow: bool,
        names: impl Iterator<Item = &'a [u8]> + Clone,
        out: &mut Vec<Option<Metadata>>,
    ) -> bool {
        let State::Ready(ring) = &mut self.state else {
            return false;
        };
        let ring_ok = submit_all(
            ring,
            dir,
            follow,
            names.clone(),
            &mut self.names,
            &mut self.bufs,
            &mut self.results,
        );
        for ((name, &res), buf) in names.zip(&self.results).zip(&self.bufs) {
            out.push(match res {
                // SAFETY: a statx that succeeded filled its buffer.
                0 => Some(unsafe { buf.assume_init_ref() })
                    .filter(|st| st.stx_mask & libc::STATX_BASIC_STATS == libc::STATX_BASIC_STATS)
                    .map(Metadata::from_statx)
                    .or_else(|| crate::meta::stat_entry(dir, name, follow)),
                // Failed, or never submitted: ask again the ordinary way.
                _ => crate::meta::stat_entry(dir, name, follow),
            });
        }
        if !ring_ok {
            self.give_up();
        }
        true
    }

    /// Whether this chunk should use the ring (made on first use).
    #[cfg(feature = "io-uring")]
    fn wants_ring(&mut self) -> bool {
        if self.mode != IoUring::Always {
            return false;
        }
        if let State::Unused = self.state {
            self.state = match supported().then(new_ring).flatten() {
                Some(ring) => State::Ready(Box::new(ring)),
                None => State::Off,
            };
        }
        true
    }

    /// The ring failed with requests perhaps still in flight: drop it, and
    /// leave it the buffers those requests may still write into.
    #[cfg(feature = "io-uring")]
    fn give_up(&mut self) {
        self.state = State::Off;
        self.mode = IoUring::Never;
        std::mem::forget(std::mem::take(&mut self.names));
        std::mem::forget(std::mem::take(&mut self.bufs));
    }
}

#[cfg(feature = "io-uring")]
fn new_ring() -> Option<Ring> {
    // A walking thread is the only one to touch its ring: completions are
    // then delivered when it waits, not by interrupting it.
    Ring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(RING_ENTRIES)
        .or_else(|_| Ring::new(RING_ENTRIES))
        .ok()
}

/// Submit a statx for every name and wait for all of them; `results` gets
/// each one's result (`PENDING` for those never submitted). False when the
/// ring itself failed: it must not be used again, nor the buffers reused
/// unless nothing was left in flight (the caller then leaks them).
#[cfg(feature = "io-uring")]
fn submit_all<'a>(
    ring: &mut Ring,
    dir: BorrowedFd<'_>,
    follow: bool,
    names: impl Iterator<Item = &'a [u8]>,
    name_buf: &mut Vec<u8>,
    bufs: &mut Vec<MaybeUninit<libc::statx>>,
    results: &mut Vec<i32>,
) -> bool {
    name_buf.clear();
    let mut starts = Vec::new();
    for name in names {
        starts.push(name_buf.len());
        name_buf.extend_from_slice(name);
        name_buf.push(0);
    }
    let n = starts.len();
    // Neither buffer moves from here until every request has completed.
    bufs.clear();
    bufs.resize_with(n, MaybeUninit::uninit);
    results.clear();
    results.resize(n, PENDING);
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    let (mut next, mut in_flight, mut refusals) = (0, 0, 0);
    while next < n || in_flight > 0 {
        {
            let mut sq = ring.submission();
            while next < n && !sq.is_full() {
                let name = CStr::from_bytes_until_nul(&name_buf[starts[next]..]).expect("NUL-terminated above");
                let sqe = opcode::Statx::new(
                    types::Fd(dir.as_raw_fd()),
                    name.as_ptr(),
                    bufs[next].as_mut_ptr().cast(),
                )
                .flags(flags)
                .mask(libc::STATX_BASIC_STATS)
                .build()
                .user_data(next as u64);
                // SAFETY: the name and the buffer stay put until completion:
                // this function waits for every request it submits.
                unsafe { sq.push(&sqe).expect("checked not full") };
                next += 1;
                in_flight += 1;
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => refusals = 0,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) || e.raw_os_error() == Some(libc::EBUSY) => {
                // Short of memory, or of completion space: what is with
                // the kernel may still complete and make room, but not forever.
                refusals += 1;
                if in_flight == pending_in_sq(ring) || refusals > MAX_REFUSALS {
                    return false;
                }
            }
            Err(_) => return false,
        }
        for cqe in ring.completion() {
            let i = cqe.user_data() as usize;
            if let Some(r) = results.get_mut(i) {
                *r = cqe.result();
                in_flight -= 1;
            }
        }
    }
    true
}

/// Submissions refused in a row before the ring is given up.
#[cfg(feature = "io-uring")]
const MAX_REFUSALS: u32 = 1000;

/// Entries pushed but not yet taken by the kernel.
#[cfg(feature = "io-uring")]
fn pending_in_sq(ring: &mut Ring) -> usize {
    ring.submission().len()
}

// The tests build rings: they run with the feature (`cargo test --all-features`).
#[cfg(all(test, feature = "io-uring"))]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn sync_stats(dir: BorrowedFd<'_>, names: &[Vec<u8>], follow: bool) -> Vec<Option<Metadata>> {
        names.iter().map(|n| crate::meta::stat_entry(dir, n, follow)).collect()
    }

    /// A directory of `files` files, a subdirectory, a link and a dangling link.
    fn tree(files: usize) -> (tempfile::TempDir, Vec<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let mut names = Vec::new();
        for i in 0..files {
            let name = format!("f{i}");
            std::fs::write(dir.path().join(&name), vec![b'x'; i % 7000]).unwrap();
            names.push(name.into_bytes());
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("f0", dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.path().join("dangling")).unwrap();
        names.extend([b"sub".to_vec(), b"link".to_vec(), b"dangling".to_vec()]);
        (dir, names)
    }

    fn open(dir: &std::path::Path) -> std::fs::File {
        std::fs::File::open(dir).unwrap()
    }

    /// Every name gets its metadata, once, in order, whatever the mode.
    #[test]
    fn every_mode_stats_every_entry_once_as_fstatat_does() {
        // More names than the ring holds: the queue is refilled as it drains.
        let (dir, names) = tree(3 * RING_ENTRIES as usize + 5);
        let fd = open(dir.path());
        for follow in [false, true] {
            let expected = sync_stats(fd.as_fd(), &names, follow);
            assert!(expected.iter().all(Option::is_some));
            for mode in [IoUring::Never, IoUring::WhenWaiting, IoUring::Always] {
                let mut bulk = BulkStat::new(mode);
                let mut out = Vec::new();
                // Twice: the second chunk reuses the ring and its buffers.
                for _ in 0..2 {
                    bulk.stat_all(fd.as_fd(), follow, names.iter().map(|n| &n[..]), &mut out);
                    assert_eq!(out, expected, "{mode:?}, follow {follow}");
                }
                if mode == IoUring::Always && supported() {
                    assert!(matches!(bulk.state, State::Ready(_)), "the ring was not used");
                }
            }
        }
    }

    /// A vanished entry fails alone, with the error a stat of it gives.
    #[test]
    fn a_vanished_entry_fails_alone() {
        let (dir, mut names) = tree(10);
        names.insert(4, b"gone".to_vec());
        let fd = open(dir.path());
        for mode in [IoUring::Never, IoUring::Always] {
            let mut out = Vec::new();
            BulkStat::new(mode).stat_all(fd.as_fd(), false, names.iter().map(|n| &n[..]), &mut out);
            assert_eq!(out.len(), names.len());
            for (name, m) in names.iter().zip(&out) {
                assert_eq!(m.is_none(), name == b"gone", "{}", String::from_utf8_lossy(name));
            }
        }
        let err = crate::meta::stat_at(fd.as_fd(), b"gone", false).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    /// With the ring forced off (as on a kernel or sandbox without it),
    /// the answers are the same and no ring is ever made.
    #[test]
    fn falls_back_to_fstatat_without_a_ring() {
        let (dir, names) = tree(20);
        let fd = open(dir.path());
        let mut bulk = BulkStat::new(IoUring::Always);
        bulk.state = State::Off;
        let mut out = Vec::new();
        bulk.stat_all(fd.as_fd(), false, names.iter().map(|n| &n[..]), &mut out);
        assert_eq!(out, sync_stats(fd.as_fd(), &names, false));
        assert!(matches!(bulk.state, State::Off));
        // A ring that failed is dropped the same way, for good.
        let mut bulk = BulkStat::new(IoUring::Always);
        bulk.give_up();
        bulk.stat_all(fd.as_fd(), false, names.iter().map(|n| &n[..]), &mut out);
        assert_eq!(out, sync_stats(fd.as_fd(), &names, false));
        assert!(matches!(bulk.state, State::Off));
    }

    /// A whole walk: every entry once, with the metadata `fstatat` gives,
    /// whether the chunks went through the ring or not.
    #[test]
    fn a_walk_through_the_ring_reports_each_entry_once() {
        use crate::WalkBuilder;
        use std::collections::HashMap;

        let dir = tempfile::tempdir().unwrap();
        for d in 0..6 {
            let sub = dir.path().join(format!("d{d}"));
            std::fs::create_dir(&sub).unwrap();
            // Past one chunk (512) and one ring's worth in the last ones.
            for f in 0..d * 150 {
                std::fs::write(sub.join(format!("f{f}")), vec![0; f % 5000]).unwrap();
            }
        }
        let walk = |mode| {
            let mut seen = HashMap::new();
            for e in WalkBuilder::new(dir.path())
                .threads(2)
                .metadata(true)
                .io_uring(mode)
                .iter()
            {
                let e = e.unwrap();
                let m = e.cached_metadata().copied().expect("every entry stat-ed");
                assert!(
                    seen.insert(e.path().to_path_buf(), m).is_none(),
                    "{} twice",
                    e.path().display()
                );
            }
            seen
        };
        // The first read of a new directory moves its atime: settle them.
        walk(IoUring::Never);
        let plain = walk(IoUring::Never);
        assert_eq!(plain.len(), 1 + 6 + (0..6).map(|d| d * 150).sum::<usize>());
        let ring = walk(IoUring::Always);
        assert_eq!(ring.len(), plain.len());
        for (path, m) in &plain {
            assert_eq!(ring.get(path), Some(m), "{}", path.display());
        }
    }

    #[test]
    fn an_empty_chunk_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open(dir.path());
        let mut out = vec![None];
        BulkStat::new(IoUring::Always).stat_all(fd.as_fd(), false, std::iter::empty(), &mut out);
        assert!(out.is_empty());
    }

    /// Stats that wait (here: a probe fed sleeping windows) switch a
    /// `WhenWaiting` thread to the ring.
    #[test]
    fn waiting_stats_switch_to_the_ring() {
        let (dir, names) = tree(3);
        let fd = open(dir.path());
        let mut bulk = BulkStat::new(IoUring::WhenWaiting);
        let mut out = Vec::new();
        bulk.stat_all(fd.as_fd(), false, names.iter().map(|n| &n[..]), &mut out);
        assert_eq!(bulk.mode, IoUring::WhenWaiting, "a hot stat is no reason");
        let slow = names.iter().map(|n| {
            std::thread::sleep(std::time::Duration::from_micros(300));
            &n[..]
        });
        for _ in 0..64 {
            bulk.stat_all(fd.as_fd(), false, slow.clone(), &mut out);
        }
        assert_eq!(bulk.mode, IoUring::Always);
        bulk.stat_all(fd.as_fd(), false, names.iter().map(|n| &n[..]), &mut out);
        assert_eq!(out, sync_stats(fd.as_fd(), &names, false));
    }
}
