//! What an entry counts for: its amount (bytes, blocks' bytes or one
//! inode) and, for `--time`, the time of the kind asked for.

use std::sync::Mutex;

use fnd_walk::Metadata;

use crate::settings::{Measure, TimeKind};
use crate::tree::Detail;

/// What the browser keeps of an entry: its apparent size (by du's rule)
/// and modification time, and whether it is a directory.
pub fn detail(m: &Metadata) -> Detail {
    let flags = if m.is_dir() { Detail::DIR } else { 0 };
    Detail::new(Usage::of(m, Measure::Apparent, None).amount, m.mtime, flags)
}

/// How much an entry counts, and its time for `--time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub amount: u64,
    pub stamp: Stamp,
}

impl Usage {
    /// Nothing yet: what sums start from.
    pub const NONE: Usage = Usage {
        amount: 0,
        stamp: Stamp::MIN,
    };

    /// An entry's usage under `measure`, with its `time` (a default stamp without one).
    pub fn of(m: &Metadata, measure: Measure, time: Option<TimeKind>) -> Usage {
        let amount = match measure {
            Measure::Disk => m.blocks * 512,
            Measure::Apparent => {
                let ft = m.file_type();
                if ft.is_file() || ft.is_dir() || ft.is_symlink() {
                    m.size
                } else {
                    0
                }
            }
            Measure::Inodes => 1,
        };
        let stamp = match time {
            None => Stamp::default(),
            Some(TimeKind::Modified) => Stamp {
                secs: m.mtime,
                nsec: m.mtime_nsec,
            },
            Some(TimeKind::Accessed) => Stamp {
                secs: m.atime,
                nsec: m.atime_nsec,
            },
            Some(TimeKind::Changed) => Stamp {
                secs: m.ctime,
                nsec: m.ctime_nsec,
            },
        };
        Usage { amount, stamp }
    }

    /// Both added: amounts summed, the newer time kept.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            amount: self.amount + other.amount,
            stamp: self.stamp.max(other.stamp),
        }
    }
}

/// A time as the kernel gives it: seconds since the epoch and nanoseconds.
/// Not nanoseconds in an i64: that holds only 1677–2262, and XFS and tmpfs
/// keep times outside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp {
    pub secs: i64,
    pub nsec: u32,
}

impl Stamp {
    /// Older than any time: what a directory's newest starts from.
    pub const MIN: Stamp = Stamp {
        secs: i64::MIN,
        nsec: 0,
    };
}

/// The newest of the times offered, from any thread.
#[derive(Debug)]
pub struct Newest(Mutex<Stamp>);

impl Newest {
    pub fn new(stamp: Stamp) -> Self {
        Newest(Mutex::new(stamp))
    }

    pub fn offer(&self, stamp: Stamp) {
        let mut newest = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *newest = (*newest).max(stamp);
    }

    pub fn get(&self) -> Stamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Without a lock: for the sole owner.
    pub fn get_mut(&mut self) -> Stamp {
        *self.0.get_mut().unwrap_or_else(|e| e.into_inner())
    }
}
