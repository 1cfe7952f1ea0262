//! `--json`: every line is one JSON object, and each says what `fnd -l`
//! (`ls -l` over the results) shows of the same entry — on a tree with
//! every kind of entry, hard links, owners with and without names, and
//! names that are not UTF-8 or hold newlines and quotes.

mod find_tree;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(find_tree::fnd_bin())
        .current_dir(dir)
        .args(args)
        // `ls` then prints full times in UTC, comparable with the JSON's.
        .env("TZ", "UTC")
        .env("TIME_STYLE", "full-iso")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
}

/// Every line of `stdout`, parsed; none may fail.
fn records(stdout: &[u8]) -> Vec<Value> {
    assert!(stdout.is_empty() || stdout.ends_with(b"\n"));
    stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(l))))
        .collect()
}

/// The exact bytes of a `{"text"…, "bytes"…}` path.
fn path_bytes(v: &Value) -> Vec<u8> {
    match v.get("bytes") {
        Some(b) => {
            let out = Command::new("base64")
                .arg("-d")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(b.as_str().unwrap().as_bytes())?;
                    c.wait_with_output()
                })
                .unwrap();
            out.stdout
        }
        None => v["text"].as_str().unwrap().as_bytes().to_vec(),
    }
}

fn tree(root: &Path) {
    fs::create_dir_all(root.join("dir/sub")).unwrap();
    fs::write(root.join("small.txt"), b"hello").unwrap();
    fs::write(root.join("dir/sub/deep.rs"), b"fn main() {}\n").unwrap();
    fs::hard_link(root.join("small.txt"), root.join("dir/hardlink")).unwrap();
    symlink("small.txt", root.join("link")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    fs::write(root.join(OsStr::from_bytes(b"bad\xff\xfe name")), b"x").unwrap();
    fs::write(root.join("quote\"back\\slash\nnewline"), b"").unwrap();
    fs::write(root.join("exe"), b"#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("exe"), fs::Permissions::from_mode(0o4751)).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o640),
        0,
    )
    .unwrap();
    if rustix::process::geteuid().is_root() {
        // One owner with a name other than root's, one with none.
        let _ = std::os::unix::fs::lchown(root.join("exe"), Some(65534), Some(65534));
        let _ = std::os::unix::fs::lchown(root.join("fifo"), Some(4242), Some(4343));
    }
}

/// `ls -l --time-style=full-iso` of one entry, split: path → (perms,
/// links, user, group, size, "date time", target).
type LsRow = (String, u64, String, String, String, String, Option<Vec<u8>>);

fn parse_ls(stdout: &[u8]) -> BTreeMap<Vec<u8>, LsRow> {
    let mut rows = BTreeMap::new();
    // A name with a newline spans two lines: ls prints it raw to a pipe.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for line in stdout.split(|&b| b == b'\n') {
        let starts_record = line.len() > 10 && b"-dlpcbs".contains(&line[0]) && line[10] == b' ';
        match lines.last_mut() {
            Some(last) if !starts_record && !line.is_empty() => {
                last.push(b'\n');
                last.extend_from_slice(line);
            }
            _ if line.is_empty() => {}
            _ => lines.push(line.to_vec()),
        }
    }
    for line in lines {
        let mut fields = Vec::new();
        let mut rest = &line[..];
        for _ in 0..8 {
            let start = rest.iter().position(|&b| b != b' ').unwrap();
            rest = &rest[start..];
            let end = rest.iter().position(|&b| b == b' ').unwrap();
            fields.push(String::from_utf8(rest[..end].to_vec()).unwrap());
            rest = &rest[end + 1..];
        }
        let (name, target) = match rest.windows(4).position(|w| w == b" -> ") {
            Some(at) if fields[0].starts_with('l') => (rest[..at].to_vec(), Some(rest[at + 4..].to_vec())),
            _ => (rest.to_vec(), None),
        };
        let name = name.strip_prefix(b"./").unwrap_or(&name).to_vec();
        assert_eq!(fields[7], "+0000");
        rows.insert(
            name,
            (
                fields[0].clone(),
                fields[1].parse().unwrap(),
                fields[2].clone(),
                fields[3].clone(),
                fields[4].clone(),
                format!("{} {}", fields[5], fields[6]),
                target,
            ),
        );
    }
    rows
}

/// `2026-11-28T17:06:29.5Z` as ls's full-iso prints it: `2026-11-28 17:06:29.500000000`.
fn as_full_iso(t: &str) -> String {
    let t = t.strip_suffix('Z').unwrap();
    let (date, time) = t.split_once('T').unwrap();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    format!("{date} {hms}.{frac:0<9}")
}

#[test]
fn every_record_says_what_ls_l_shows() {
    let t = tempfile::tempdir().unwrap();
    tree(t.path());
    let json = run(t.path(), &["--json", "-u", "."]);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    assert_eq!(json.stderr, b"");
    let listed = run(t.path(), &["-l", "-u", "."]);
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let ls = parse_ls(&listed.stdout);
    let records = records(&json.stdout);
    assert_eq!(records.len(), ls.len(), "{ls:?}");
    for r in &records {
        let path = path_bytes(&r["path"]);
        let lossy = String::from_utf8_lossy(&path);
        let (perms, links, user, group, size, mtime, target) =
            ls.get(&path).unwrap_or_else(|| panic!("{lossy} not in fnd -l"));
        assert_eq!(r["perms"], perms.as_str(), "{lossy}");
        let mode = u32::from_str_radix(r["mode"].as_str().unwrap(), 8).unwrap();
        let meta = fs::symlink_metadata(t.path().join(OsStr::from_bytes(&path))).unwrap();
        assert_eq!(mode, meta.permissions().mode() & 0o7777, "{lossy}");
        assert_eq!(r["nlink"], *links, "{lossy}");
        assert_eq!(r["user"], user.as_str(), "{lossy}");
        assert_eq!(r["group"], group.as_str(), "{lossy}");
        let kind = r["type"].as_str().unwrap();
        // `ls -h` shows a directory's 4096 as 4.0K; the rest are small.
        if kind != "directory" {
            assert_eq!(r["size_bytes"].to_string(), *size, "{lossy}");
        }
        assert_eq!(as_full_iso(r["modified"].as_str().unwrap()), *mtime, "{lossy}");
        assert_eq!(r.get("target").map(path_bytes), *target, "{lossy}");
        let expected_kind = match perms.as_bytes()[0] {
            b'd' => "directory",
            b'l' => "symlink",
            b'p' => "fifo",
            _ => "file",
        };
        assert_eq!(kind, expected_kind, "{lossy}");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(r["inode"], meta.ino(), "{lossy}");
        assert_eq!(r["uid"], meta.uid(), "{lossy}");
        assert_eq!(r["gid"], meta.gid(), "{lossy}");
        for key in ["accessed", "changed"] {
            assert!(r[key].as_str().unwrap().ends_with('Z'), "{lossy} {key}");
        }
    }
    // The names that needed care came through exactly.
    let paths: Vec<Vec<u8>> = records.iter().map(|r| path_bytes(&r["path"])).collect();
    assert!(paths.contains(&b"bad\xff\xfe name".to_vec()));
    assert!(paths.contains(&b"quote\"back\\slash\nnewline".to_vec()));
    let bad = records.iter().find(|r| r["path"].get("bytes").is_some()).unwrap();
    assert_eq!(bad["path"]["text"], "bad\u{fffd}\u{fffd} name");
}

#[test]
fn filters_paths_and_separators_apply_as_to_lines() {
    let t = tempfile::tempdir().unwrap();
    tree(t.path());
    let plain = run(t.path(), &["-t", "f", "-e", "rs", "-e", "txt"]);
    let json = run(t.path(), &["--json", "-t", "f", "-e", "rs", "-e", "txt"]);
    let mut from_json: Vec<String> = records(&json.stdout)
        .iter()
        .map(|r| r["path"]["text"].as_str().unwrap().to_owned())
        .collect();
    let mut lines: Vec<String> = String::from_utf8(plain.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    from_json.sort();
    lines.sort();
    assert_eq!(from_json, lines);
    assert_eq!(lines, ["dir/sub/deep.rs", "small.txt"]);
    // Directories carry no trailing separator: the type says what they are.
    let json = run(t.path(), &["--json", "--path-separator", "\\", "-t", "d", "sub"]);
    let r = records(&json.stdout);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["path"]["text"], "dir\\sub");
    assert_eq!(r[0]["type"], "directory");
    // A record for each result, however many threads print them.
    for threads in ["-j1", "-j3"] {
        let json = run(t.path(), &["--json", "-u", threads, "."]);
        assert_eq!(records(&json.stdout).len(), 11);
    }
}

#[test]
fn json_refuses_other_output_modes() {
    let t = tempfile::tempdir().unwrap();
    for other in [&["-l"][..], &["--format", "{}"], &["-X", "echo"], &["-0"]] {
        let mut args = vec!["--json"];
        args.extend_from_slice(other);
        let out = run(t.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{other:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
            "{other:?}"
        );
    }
}
