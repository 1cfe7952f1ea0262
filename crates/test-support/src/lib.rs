//! What the workspace's tests share.

pub mod hostile;
pub mod layers;
pub mod references;
