//! What the workspace's tests share.

pub mod expected;
pub mod hostile;
pub mod layers;
pub mod process;
pub mod references;
