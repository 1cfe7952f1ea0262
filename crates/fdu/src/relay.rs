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
//! directory handed over, never one per entry. A directory the adopting
//! rank cannot open still sends its own size back, and prints it, as its
//! parent does for one it could not open ([`Arrival`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use crate::node::{join, Listed, Node, Parent, Subtotal};
use crate::run::Run;
use crate::tree::{Detail, TreeBuilder};
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
    /// Totals of directories that completed while no job could carry
    /// them (the walk's own structures let go of the last nodes after its
    /// job is over), for the next job.
    deferred: Mutex<Vec<(usize, Vec<u8>)>>,
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
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Send totals through `courier` from now on; `None` once a job is
    /// over: totals then wait for [`send_deferred`](Self::send_deferred).
    pub fn set_courier(&self, courier: Option<Arc<dyn Courier>>) {
        *self.courier.write().unwrap_or_else(|e| e.into_inner()) = courier;
    }

    /// Send the totals that waited for a job, through the current courier.
    /// Only while this rank is busy in that job.
    pub fn send_deferred(&self) {
        let waiting = std::mem::take(&mut *self.deferred.lock().unwrap_or_else(|e| e.into_inner()));
        let courier = self.courier.read().unwrap_or_else(|e| e.into_inner());
        let courier = courier.as_ref().expect("a job to send totals through");
        for (to, bytes) in waiting {
            courier.send(to, bytes);
        }
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

    /// What another rank's [`hand_over`](Self::hand_over) sent, checked,
    /// for its subdirectory `name` of `parent_path` (at `parent_depth`).
    pub fn receive(
        self: &Arc<Self>,
        run: &Arc<Run>,
        bytes: &[u8],
        parent_path: &[u8],
        parent_depth: usize,
        name: &[u8],
    ) -> Result<Arrival, String> {
        let adopted = Adopted::decode(bytes).map_err(|e| e.to_string())?;
        let from = adopted.rank as usize;
        if from >= self.ranks || from == self.rank {
            return Err(format!("a subdirectory whose parent is on rank {from}"));
        }
        Ok(Arrival {
            adopted,
            relay: self.clone(),
            run: run.clone(),
            path: join(parent_path, name).into(),
            depth: parent_depth + 1,
            entered: AtomicBool::new(false),
        })
    }

    /// Send a completed subtree's subtotal to its parent, `id` on rank `to`.
    fn send_total(&self, to: usize, id: u64, sub: Subtotal) {
        let tree = sub.tree.map(|kids| kids.into_node(sub.total.amount));
        let bytes = WireSubtotal::encode(id, sub.total, tree.as_ref().map(|t| (&*sub.name, t)));
        match &*self.courier.read().unwrap_or_else(|e| e.into_inner()) {
            Some(courier) => courier.send(to, bytes),
            None => self
                .deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((to, bytes)),
        }
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
        let (name, tree) = match sub.tree {
            Some((name, kids)) => (name.into(), Some(kids)),
            None => (Box::default(), None),
        };
        // The browser's details never cross ranks: `-i` runs in one process.
        parent.absorb(Subtotal {
            name,
            total: sub.total,
            tree,
            detail: Detail::default(),
        });
        drop(parent);
        Ok(())
    }
}

/// A subdirectory another rank handed over, until the walk enters it
/// ([`enter`](Self::enter)); if it never does (the directory cannot be
/// opened), dropping it prints the directory's own size and sends it back.
pub struct Arrival {
    adopted: Adopted,
    relay: Arc<Relay>,
    run: Arc<Run>,
    path: Box<[u8]>,
    depth: usize,
    entered: AtomicBool,
}

impl Arrival {
    /// The walk entered it: its node, whose total goes back when it completes.
    pub fn enter(&self) -> Node {
        self.entered.store(true, Relaxed);
        let adopted = &self.adopted;
        let relay = self.relay.clone();
        let (to, id) = (adopted.rank as usize, adopted.id);
        let listed = Listed {
            own: adopted.own,
            position: adopted.position,
            dev: adopted.dev,
            ino: adopted.ino,
            detail: Detail::default(),
        };
        Node::adopted(
            &self.run,
            &self.path,
            self.depth,
            listed,
            &adopted.key,
            adopted.inode_sort,
            Parent::Elsewhere(Box::new(move |sub| relay.send_total(to, id, sub))),
        )
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if self.entered.load(Relaxed) {
            return;
        }
        let own = self.adopted.own;
        if self.depth <= self.run.settings.max_depth {
            let mut line = Vec::new();
            self.run.line(&mut line, own, &self.path);
            self.run.out.write(&line);
        }
        let name = self.path.rsplit(|&b| b == b'/').next().unwrap_or(&self.path);
        let sub = Subtotal {
            name: name.into(),
            total: own,
            tree: self.run.settings.keeps_tree().then(TreeBuilder::default),
            detail: Detail::default(),
        };
        self.relay.send_total(self.adopted.rank as usize, self.adopted.id, sub);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::testing::{enter, Lines};

    /// Keeps what is sent, for the test to deliver, as a job would.
    struct Direct(Mutex<Vec<(usize, Vec<u8>)>>);

    impl Courier for Direct {
        fn send(&self, to: usize, bytes: Vec<u8>) {
            self.0.lock().unwrap().push((to, bytes));
        }
    }

    #[test]
    fn a_subtree_read_elsewhere_completes_its_parent_when_its_total_comes_back() {
        let mut out = Lines::new(&[]);
        let here = Arc::new(Relay::new(0, 2));
        let there = Arc::new(Relay::new(1, 2));
        let courier = Arc::new(Direct(Mutex::new(Vec::new())));
        there.set_courier(Some(courier.clone()));
        let root = out.operand("r");
        root.list_entry();
        root.list_subdir(b"far", (0, 7), crate::node::testing::usage(100, 0), Default::default());
        let bytes = here.hand_over(&root, b"far").unwrap();
        let near = enter(&root, "near", 8, 0);
        drop((near, root));
        assert_eq!(out.take(), ["100\tr/near"], "r waits for far");
        let arrival = there.receive(&out.run, &bytes, b"r", 0, b"far").unwrap();
        assert_eq!(arrival.adopted.key.len(), 1);
        let far = Arc::new(arrival.enter());
        drop(arrival);
        far.add(crate::node::testing::usage(5, 0));
        drop(far);
        assert_eq!(out.take(), ["105\tr/far"]);
        let (to, total) = courier.0.lock().unwrap().pop().unwrap();
        assert_eq!(to, 0);
        here.absorb(&total).unwrap();
        assert_eq!(out.take(), ["1205\tr"]);
        assert!(here.absorb(&total).is_err(), "a total comes back once");
        assert!(
            here.receive(&out.run, &bytes, b"r", 0, b"far").is_err(),
            "not from this rank itself"
        );
    }

    #[test]
    fn a_subdirectory_that_cannot_be_opened_elsewhere_counts_its_own_size() {
        let mut out = Lines::new(&[]);
        let here = Arc::new(Relay::new(0, 2));
        let there = Arc::new(Relay::new(1, 2));
        let courier = Arc::new(Direct(Mutex::new(Vec::new())));
        there.set_courier(Some(courier.clone()));
        let root = out.operand("r");
        root.list_entry();
        root.list_subdir(
            b"locked",
            (0, 7),
            crate::node::testing::usage(100, 0),
            Default::default(),
        );
        let bytes = here.hand_over(&root, b"locked").unwrap();
        drop(root);
        drop(there.receive(&out.run, &bytes, b"r", 0, b"locked").unwrap());
        assert_eq!(out.take(), ["100\tr/locked"]);
        let (_, total) = courier.0.lock().unwrap().pop().unwrap();
        here.absorb(&total).unwrap();
        assert_eq!(out.take(), ["1100\tr"]);
    }
}
