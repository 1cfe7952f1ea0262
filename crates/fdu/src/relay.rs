//! Subtrees read by other ranks of an MPI job (feature `mpi`; the code
//! itself needs no MPI): the parent's side, which waits for their totals,
//! and the adopting side, whose node sends its total back when it
//! completes.
//!
//! When a rank gives a pending subdirectory away, its parent's node is
//! set aside here under a fresh id (which keeps it from completing), and
//! the subdirectory travels with an [`Adopted`]: that id, how the parent
//! listed it and du's order key of it. The adopting rank makes it a node
//! whose parent is [`Parent::Elsewhere`]; once its subtree is complete
//! there, a [`WireSubtotal`] goes back to the parent's rank, where
//! [`Relay::absorb`] adds it and lets the parent go. One message per
//! directory handed over, never one per entry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use crate::node::{Listed, Node, Parent, Subtotal};
use crate::run::Run;
use crate::wire::{Adopted, Subtotal as WireSubtotal};

/// Carries a message to another rank (the MPI job's `Handle::send`).
pub trait Courier: Send + Sync {
    fn send(&self, to: usize, bytes: Vec<u8>);
}

/// One rank's side of the subtrees handed between ranks.
pub struct Relay {
    rank: usize,
    ranks: usize,
    /// Parents waiting for a subdirectory another rank reads, by id.
    waiting: Mutex<HashMap<u64, Arc<Node>>>,
    next_id: AtomicU64,
    /// How totals go back now: through the job that is running.
    courier: RwLock<Option<Arc<dyn Courier>>>,
}

impl Relay {
    /// Rank `rank` of `ranks`.
    pub fn new(rank: usize, ranks: usize) -> Relay {
        Relay {
            rank,
            ranks,
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            courier: RwLock::new(None),
        }
    }

    /// Send totals through `courier` from now on (`None` between jobs,
    /// when no node may complete).
    pub fn set_courier(&self, courier: Option<Arc<dyn Courier>>) {
        *self.courier.write().unwrap_or_else(|e| e.into_inner()) = courier;
    }

    /// `parent` gives its subdirectory `name` to another rank: what travels
    /// with it, or `None` when the parent did not list it (it stays here).
    pub fn hand_over(&self, parent: &Arc<Node>, name: &[u8]) -> Option<Vec<u8>> {
        let listed = parent.claim(name)?;
        let id = self.next_id.fetch_add(1, Relaxed);
        let key = parent.visit_order(listed.position, listed.ino).into_vec();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, parent.clone());
        let adopted = Adopted {
            rank: self.rank as u32,
            id,
            own: listed.own,
            position: listed.position,
            dev: listed.dev,
            ino: listed.ino,
            key,
            inode_sort: parent.inode_sort(),
        };
        Some(adopted.encode())
    }

    /// What another rank's [`hand_over`](Self::hand_over) sent, checked.
    pub fn receive(&self, bytes: &[u8]) -> Result<Adopted, String> {
        let adopted = Adopted::decode(bytes).map_err(|e| e.to_string())?;
        let from = adopted.rank as usize;
        if from >= self.ranks || from == self.rank {
            return Err(format!("a subdirectory whose parent is on rank {from}"));
        }
        Ok(adopted)
    }

    /// The node of a subdirectory another rank handed over, at `path` and
    /// `depth`: its total goes back there when it completes.
    pub fn adopt(self: &Arc<Self>, run: &'static Run, path: &[u8], depth: usize, adopted: &Adopted) -> Node {
        let relay = self.clone();
        let (to, id) = (adopted.rank as usize, adopted.id);
        let send = move |total| {
            let courier = relay.courier.read().unwrap_or_else(|e| e.into_inner());
            let courier = courier.as_ref().expect("a directory completes only while a job runs");
            courier.send(to, WireSubtotal { id, total }.encode());
        };
        let listed = Listed {
            own: adopted.own,
            position: adopted.position,
            dev: adopted.dev,
            ino: adopted.ino,
        };
        Node::adopted(
            run,
            path,
            depth,
            listed,
            &adopted.key,
            adopted.inode_sort,
            Parent::Elsewhere(Box::new(send)),
        )
    }

    /// A subtree's total from another rank: its parent adds it and is let
    /// go (it completes here if nothing else holds it, on this thread).
    pub fn absorb(&self, bytes: &[u8]) -> Result<(), String> {
        let sub = WireSubtotal::decode(bytes).map_err(|e| e.to_string())?;
        let parent = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&sub.id)
            .ok_or_else(|| format!("a total for directory {} that this rank did not hand over", sub.id))?;
        parent.absorb(Subtotal {
            name: Box::default(),
            total: sub.total,
            tree: None,
        });
        drop(parent);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testing::{enter, Lines};
    use std::sync::atomic::AtomicUsize;

    /// Delivers to the other relay at once, as a job would (later).
    struct Direct(Mutex<Vec<(usize, Vec<u8>)>>, AtomicUsize);

    impl Courier for Direct {
        fn send(&self, to: usize, bytes: Vec<u8>) {
            self.1.fetch_add(1, Relaxed);
            self.0.lock().unwrap().push((to, bytes));
        }
    }

    #[test]
    fn a_subtree_read_elsewhere_completes_its_parent_when_its_total_comes_back() {
        let mut out = Lines::new(&[]);
        let here = Arc::new(Relay::new(0, 2));
        let there = Arc::new(Relay::new(1, 2));
        let courier = Arc::new(Direct(Mutex::new(Vec::new()), AtomicUsize::new(0)));
        there.set_courier(Some(courier.clone()));
        let root = out.operand("r");
        root.list_entry();
        root.list_subdir(b"far", (0, 7), crate::node::testing::usage(100, 0));
        let bytes = here.hand_over(&root, b"far").unwrap();
        let near = enter(&root, "near", 8, 0);
        drop((near, root));
        assert_eq!(out.take(), ["100\tr/near"], "r waits for far");
        let adopted = there.receive(&bytes).unwrap();
        assert_eq!(adopted.key.len(), 1);
        let far = Arc::new(there.adopt(out.run, b"r/far", 1, &adopted));
        far.add(crate::node::testing::usage(5, 0));
        drop(far);
        assert_eq!(out.take(), ["105\tr/far"]);
        let (to, total) = courier.0.lock().unwrap().pop().unwrap();
        assert_eq!(to, 0);
        here.absorb(&total).unwrap();
        assert_eq!(out.take(), ["1205\tr"]);
        assert!(here.absorb(&total).is_err(), "a total comes back once");
        assert!(here.receive(&bytes).is_err(), "not from this rank itself");
    }
}
