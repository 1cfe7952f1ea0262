//! Closure filters (`WalkBuilder::prune`, `WalkBuilder::keep`) and the chain
//! that lets several filters and hooks judge the same walk.
//!
//! The reader knows one hook; the builder folds every filter and hook it
//! was given into one [`Chain`], so adding one never touches the reading
//! loop. Relies on the filter contract (`crate::filter`) alone.

use std::sync::Arc;

use crate::filter::{
    ChainState, Decision, DirInfo, EntryFilter, ErasedHook, ErasedState, ImportError, MovedDir, RawEntry,
};

/// A predicate over raw entries, shared by every thread of a walk.
pub(crate) type EntryPredicate = dyn Fn(&RawEntry<'_>) -> bool + Send + Sync;

/// Directories for which the predicate holds are yielded but not read.
pub(crate) struct Prune(pub(crate) Box<EntryPredicate>);

impl EntryFilter for Prune {
    fn decide(&self, entry: &RawEntry<'_>) -> Decision {
        let descend = !entry.is_dir() || !(self.0)(entry);
        Decision { emit: true, descend }
    }
}

/// Only entries for which the predicate holds are yielded; the walk still
/// descends into the directories it does not yield.
pub(crate) struct Keep(pub(crate) Box<EntryPredicate>);

impl EntryFilter for Keep {
    fn decide(&self, entry: &RawEntry<'_>) -> Decision {
        Decision {
            emit: (self.0)(entry),
            descend: true,
        }
    }
}

/// Two hooks in turn: an entry is yielded when both yield it, and a
/// directory is read when both descend. The second is not asked about an
/// entry the first drops entirely.
pub(crate) struct Chain {
    first: Arc<dyn ErasedHook>,
    second: Arc<dyn ErasedHook>,
}

impl Chain {
    /// All `hooks` as one, or `None` when there are none.
    pub(crate) fn of(hooks: impl IntoIterator<Item = Arc<dyn ErasedHook>>) -> Option<Arc<dyn ErasedHook>> {
        hooks
            .into_iter()
            .reduce(|first, second| Arc::new(Chain { first, second }))
    }

    fn states(state: Option<&ErasedState>) -> (Option<&ErasedState>, Option<&ErasedState>) {
        match state.and_then(|s| s.downcast_ref::<ChainState>()) {
            Some(s) => (s.first.as_ref(), s.second.as_ref()),
            None => (None, None),
        }
    }
}

impl ErasedHook for Chain {
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&ErasedState>) -> Option<ErasedState> {
        let (first_parent, second_parent) = Chain::states(parent);
        let first = self.first.enter(dir, first_parent);
        let second = self.second.enter(dir, second_parent);
        // Stateless filters (closures) cost no allocation per directory.
        if first.is_none() && second.is_none() {
            return None;
        }
        Some(Arc::new(ChainState { first, second }))
    }

    fn decide(&self, state: Option<&ErasedState>, entry: &RawEntry<'_>) -> Decision {
        let (first_state, second_state) = Chain::states(state);
        let first = self.first.decide(first_state, entry);
        if first == Decision::SKIP {
            return first;
        }
        let second = self.second.decide(second_state, entry);
        Decision {
            emit: first.emit && second.emit,
            descend: first.descend && second.descend,
        }
    }

    /// None: a chain has never asked for probes (its hooks try the names
    /// themselves), and directories it judges can still be split.
    fn probe_names(&self) -> &[Vec<u8>] {
        &[]
    }

    /// Both hooks' states, each as `0` (none) or `1`, a little-endian
    /// `u32` length and its bytes; `None` if either cannot travel.
    fn export_state(&self, state: &ErasedState, handover: &MovedDir<'_>) -> Option<Vec<u8>> {
        let state = state.downcast_ref::<ChainState>()?;
        let mut out = Vec::new();
        for (filter, part) in [(&self.first, &state.first), (&self.second, &state.second)] {
            match part {
                None => out.push(0),
                Some(part) => {
                    let bytes = filter.export_state(part, handover)?;
                    out.push(1);
                    out.extend_from_slice(&u32::try_from(bytes.len()).ok()?.to_le_bytes());
                    out.extend_from_slice(&bytes);
                }
            }
        }
        Some(out)
    }

    fn import_state(&self, bytes: &[u8], handover: &MovedDir<'_>) -> Result<ErasedState, ImportError> {
        let mut rest = bytes;
        let mut part = |filter: &Arc<dyn ErasedHook>| -> Result<Option<ErasedState>, ImportError> {
            let (&tag, tail) = rest.split_first().ok_or("a chained filter state cut short")?;
            rest = tail;
            match tag {
                0 => Ok(None),
                1 => {
                    let len: [u8; 4] = rest
                        .get(..4)
                        .and_then(|l| l.try_into().ok())
                        .ok_or("a chained filter state cut short")?;
                    let len = u32::from_le_bytes(len) as usize;
                    let own = rest
                        .get(4..4 + len)
                        .ok_or("a chained filter state longer than its message")?;
                    rest = &rest[4 + len..];
                    filter.import_state(own, handover).map(Some)
                }
                _ => Err("a chained filter state neither absent nor present".into()),
            }
        };
        let first = part(&self.first)?;
        let second = part(&self.second)?;
        if !rest.is_empty() {
            return Err("trailing bytes after a chained filter state".into());
        }
        Ok(Arc::new(ChainState { first, second }))
    }
}
