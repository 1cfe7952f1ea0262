//! A small tree for the output and exec tests, and a way to run fnd in it
//! with a clean environment (no LS_COLORS, NO_COLOR or user ignore files).

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use assert_cmd::Command;
use tempfile::TempDir;

/// `a/`, `a/b.d/`, `a/b.d/y`, `a/x.tar.gz` (5 bytes), `exe` (mode 755),
/// `link -> a`, `dangling -> nowhere`, `.hid`.
pub fn tree() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("a/b.d")).unwrap();
    fs::write(root.join("a/b.d/y"), b"").unwrap();
    fs::write(root.join("a/x.tar.gz"), b"12345").unwrap();
    fs::write(root.join("exe"), b"#!/bin/sh\n").unwrap();
    // Explicit modes: the tests must not depend on the umask.
    for (path, mode) in [
        ("a", 0o755),
        ("a/b.d", 0o755),
        ("a/b.d/y", 0o644),
        ("a/x.tar.gz", 0o644),
        ("exe", 0o755),
    ] {
        fs::set_permissions(root.join(path), fs::Permissions::from_mode(mode)).unwrap();
    }
    fs::write(root.join(".hid"), b"").unwrap();
    symlink("a", root.join("link")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    dir
}

/// fnd, run in `dir` with nothing from the user's environment that changes output.
pub fn fnd(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("fnd").unwrap();
    cmd.current_dir(dir)
        .env_remove("LS_COLORS")
        .env_remove("NO_COLOR")
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".no-config"));
    cmd
}

/// The output's records (split on `\n`), sorted: parallel output has no order.
pub fn sorted_lines(stdout: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(stdout).lines().map(str::to_owned).collect();
    lines.sort();
    lines
}
