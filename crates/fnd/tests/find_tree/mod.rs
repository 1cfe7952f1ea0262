//! The tree the option tests and the differential test search: every kind
//! of entry fd tells apart, ignore files at several levels, odd names.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

pub fn fnd_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fnd")
}

fn file(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, bytes).unwrap();
}

/// Build the search tree at `root` (its parent `outer` gets ignore files of
/// its own) and a home directory with global ignore files; `git init` the
/// root when `in_git`.
pub fn build_tree(root: &Path, home: &Path, in_git: bool) {
    let outer = root.parent().unwrap();
    fs::create_dir_all(root).unwrap();
    file(&outer.join(".ignore"), b"parent_ignored*\n");
    file(&outer.join(".gitignore"), b"parent_git_ignored*\n");
    for name in [
        "a.txt",
        "b.TXT",
        "c.rs",
        "with space.md",
        "-rf",
        "\u{fc}n\u{ef}.txt",
        "parent_ignored.txt",
        "parent_git_ignored.txt",
    ] {
        file(&root.join(name), b"x");
    }
    file(&root.join(OsStr::from_bytes(b"bad\xff.txt")), b"x");
    file(&root.join(".hidden"), b"x");
    file(&root.join(".hdir/x.txt"), b"x");
    file(&root.join(".hdir/.gitignore"), b"x.txt\n");
    file(&root.join("dir/sub/deep.rs"), b"x");
    file(&root.join("dir/sub/deeper/z.txt"), b"x");
    file(&root.join("dir/file.tar.gz"), b"x");
    file(&root.join("dir/.txt"), b"x");
    file(&root.join("dir/txt"), b"x");
    file(&root.join("dir/sub/kept.log"), b"x");
    file(&root.join("dir/.gitignore"), b"*.md\n!kept.log\n");
    file(&root.join("dir/note.md"), b"x");
    file(&root.join("big.bin"), &[0u8; 2000]);
    file(&root.join("empty.txt"), b"");
    fs::create_dir_all(root.join("emptydir")).unwrap();
    file(&root.join("exe.sh"), b"#!/bin/sh\n");
    fs::set_permissions(root.join("exe.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    file(&root.join(".gitignore"), b"*.log\n/build/\n");
    file(&root.join("x.log"), b"x");
    file(&root.join("build/out.o"), b"x");
    file(&root.join(".ignore"), b"dot_ignored*\n");
    file(&root.join("dot_ignored.txt"), b"x");
    file(&root.join(".fdignore"), b"fd_ignored*\n");
    file(&root.join("fd_ignored.txt"), b"x");
    file(&root.join("custom.ignore"), b"*.md\n");
    file(&root.join("skipme/marker"), b"");
    file(&root.join("skipme/inside.txt"), b"x");
    file(&root.join("globally_ignored.txt"), b"x");
    file(&root.join("git_global_ignored.txt"), b"x");
    file(&root.join("old.txt"), b"x");
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400 * 365 * 20);
    fs::File::options()
        .write(true)
        .open(root.join("old.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    symlink("dir", root.join("link_to_dir")).unwrap();
    symlink("a.txt", root.join("link_to_file")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    symlink("..", root.join("dir/sub/loop")).unwrap();
    let fifo = root.join("fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(made, "mkfifo failed");
    file(&home.join(".config/fd/ignore"), b"globally_ignored*\n");
    file(&home.join(".config/git/ignore"), b"git_global_ignored*\n");
    if in_git {
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(root)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "git init failed");
        file(&root.join(".git/info/exclude"), b"excluded_by_git*\n");
    }
    file(&root.join("excluded_by_git.txt"), b"x");
}

/// Create files (and directories, for names ending in `/`) under `root`.
pub fn make(root: &Path, spec: &[&str]) {
    for item in spec {
        match item.strip_suffix('/') {
            Some(dir) => fs::create_dir_all(root.join(dir)).unwrap(),
            None => file(&root.join(item), b"x"),
        }
    }
}

/// Write a file with the given contents (an ignore file, say).
pub fn write(root: &Path, name: &str, contents: &str) {
    file(&root.join(name), contents.as_bytes());
}

/// What one run of fnd printed and returned.
pub struct Out {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    /// Output lines, sorted (the parallel walk's order is not fixed).
    pub fn sorted(&self) -> Vec<String> {
        let mut v: Vec<String> = String::from_utf8_lossy(&self.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        v.sort();
        v
    }

    /// Output lines in the order printed.
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Run fnd in `cwd`, away from any user-level ignore configuration.
pub fn fnd(cwd: &Path, args: &[&str]) -> Out {
    fnd_env(cwd, args, &[])
}

pub fn fnd_env(cwd: &Path, args: &[&str], env: &[(&str, &OsStr)]) -> Out {
    let mut cmd = Command::new(fnd_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", "/nonexistent-home")
        .env("XDG_CONFIG_HOME", "/nonexistent-home/.config");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `git init` a directory; false when git is not installed.
pub fn git_init(dir: &Path) -> bool {
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("git is not installed: skipping the in-repository checks");
    }
    ok
}

/// Sorted expected lines.
pub fn expect(lines: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}
