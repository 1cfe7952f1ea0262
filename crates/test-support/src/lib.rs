//! What the workspace's tests share.

pub mod layers;
