//! The serial orders: one thread reads every directory, in an order fixed
//! by the tree alone.

use std::collections::VecDeque;

use super::root_jobs;
use crate::read::{Job, Reader};
use crate::settings::Shared;
use crate::visit::{Flow, Visitor};

/// One thread reads breadth-first while fewer than `frontier` directories
/// are queued, and depth-first below that: `usize::MAX` is breadth-first
/// throughout, 0 depth-first. Within a directory, subdirectories are read
/// in listing order either way.
pub(super) fn run<V: Visitor>(shared: &Shared, mut visitor: V, frontier: usize) -> V {
    let mut reader = Reader::new();
    let mut shallow: VecDeque<Job> = VecDeque::new();
    let mut deep: Vec<Job> = Vec::new();
    let mut children = Vec::new();
    for root in root_jobs(shared) {
        shallow.push_back(root);
        while let Some(job) = deep.pop().or_else(|| shallow.pop_front()) {
            if reader.read(shared, job, &mut visitor, &mut children, None) == Flow::Stop {
                return visitor;
            }
            if shallow.len() + deep.len() < frontier {
                shallow.extend(children.drain(..));
            } else {
                deep.extend(children.drain(..).rev());
            }
        }
    }
    visitor
}
