//! What the workspace's tests share: the reference tools they compare
//! with, hostile trees, stored expected outputs, commands run with a
//! deadline, and the check that each crate's modules import only
//! downwards, against the layers the workspace's ARCHITECTURE.md lists.

pub mod expected;
pub mod hostile;
pub mod layers;
pub mod process;
pub mod references;
