//! fdu's lines in GNU du's exact order, byte for byte and unsorted, on
//! trees built to stress the order: many siblings, a deep chain, a
//! directory past fts's inode-sort threshold (10,000 entries), hard links
//! across directories; and the same bytes for every `-j` and every run.
//!
//! Without GNU du the comparisons say so on stderr and check only that
//! fdu agrees with itself.

use std::fs;
use std::path::Path;
use std::process::Command;

use fnd_test_support::references;

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// The option cases compared (each also with several operands).
const CASES: &[&[&str]] = &[
    &[],
    &["-a"],
    &["-d1"],
    &["-d2", "-a"],
    &["-S"],
    &["-S", "-a"],
    &["--time", "--time-style=+%s"],
    &["-c"],
    &["-a", "-c", "--apparent-size"],
    &["--inodes", "-a"],
    &["-l", "-a"],
];

fn output(mut cmd: Command, args: &[&str], cwd: &Path) -> Vec<u8> {
    let out = cmd
        .args(args)
        .current_dir(cwd)
        .env("TZ", "UTC")
        .env_remove("BLOCK_SIZE")
        .env_remove("DU_BLOCK_SIZE")
        .env_remove("BLOCKSIZE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn fdu(args: &[&str], cwd: &Path) -> Vec<u8> {
    output(Command::new(FDU), args, cwd)
}

/// fdu's lines for `args` are du's (when du is here), and the same for
/// `-j1`, `-j2` and `-j8`.
fn same_as_du_on_every_thread_count(args: &[&str], root: &Path, du: Option<&references::Reference>) {
    let first = fdu(args, root);
    if let Some(du) = du {
        let theirs = output(du.command(), args, root);
        assert!(
            first == theirs,
            "{args:?}: fdu's lines differ from du's (first difference at line {})",
            first
                .split(|&b| b == b'\n')
                .zip(theirs.split(|&b| b == b'\n'))
                .position(|(a, b)| a != b)
                .unwrap_or(0)
        );
    }
    for j in ["-j1", "-j2", "-j8"] {
        let with_j: Vec<&str> = [j].iter().chain(args).copied().collect();
        assert!(fdu(&with_j, root) == first, "{with_j:?} differs from {args:?}");
    }
}

/// The tree: `wide` (300 siblings, each with a few files and a
/// subdirectory), `chain` (200 levels), `huge` (a directory of 20,500
/// entries with subdirectories among them), hard links across them.
fn build(root: &Path) {
    let wide = root.join("t/wide");
    for i in 0..300 {
        let d = wide.join(format!("s{i:03}"));
        fs::create_dir_all(d.join("inner")).unwrap();
        for f in 0..3 {
            fs::write(d.join(format!("f{f}")), vec![b'x'; 100 * (i % 7 + f)]).unwrap();
        }
        fs::write(d.join("inner/leaf"), vec![b'y'; 5000]).unwrap();
    }
    let mut deep = root.join("t/chain");
    for level in 0..200 {
        deep.push(format!("l{level}"));
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("bottom"), vec![b'z'; 9000]).unwrap();
    let huge = root.join("t/huge");
    fs::create_dir_all(&huge).unwrap();
    for i in 0..20_500 {
        if i % 1000 == 0 {
            fs::create_dir(huge.join(format!("dir{i}"))).unwrap();
            fs::write(huge.join(format!("dir{i}/inside")), vec![b'q'; 3000]).unwrap();
        } else {
            fs::write(huge.join(format!("e{i}")), []).unwrap();
        }
    }
    // Links across directories: whichever du meets first counts.
    fs::write(root.join("t/wide/s005/shared"), vec![b'l'; 20_000]).unwrap();
    fs::hard_link(root.join("t/wide/s005/shared"), root.join("t/huge/link_a")).unwrap();
    fs::hard_link(root.join("t/wide/s005/shared"), root.join("t/wide/s200/inner/link_b")).unwrap();
    fs::hard_link(root.join("t/wide/s005/shared"), deep.join("link_c")).unwrap();
}

#[test]
fn lines_in_dus_order_for_every_thread_count_and_every_run() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let root = dir.path();
    let du = references::gnu_du();
    for case in CASES {
        for operands in [&["t"][..], &["t/wide", "t/chain", "t/huge", "t"]] {
            let args: Vec<&str> = case.iter().chain(operands).copied().collect();
            same_as_du_on_every_thread_count(&args, root, du.as_ref());
        }
    }
    let first = fdu(&["-a", "t"], root);
    for run in 0..20 {
        assert!(fdu(&["-a", "-j8", "t"], root) == first, "run {run} differs");
    }
}

/// Directories reached through links too (`-L`): du counts each at the
/// first place its order meets it, link or not, and with `-l` at every
/// place but inside itself. `real` holds directories, `links` links to
/// them and to each other's parents, each real one links to the next, and
/// `loop` to the top: whatever order the file system lists them in, some
/// link comes before the directory it names.
fn build_links(root: &Path) {
    let top = root.join("l");
    for i in 0..12 {
        let d = top.join(format!("real/r{i:02}"));
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("f"), vec![b'r'; 1000 * (i + 1)]).unwrap();
        fs::write(d.join("sub/g"), vec![b's'; 7000]).unwrap();
        if i < 11 {
            std::os::unix::fs::symlink(format!("../r{:02}", i + 1), d.join("next")).unwrap();
        }
        std::os::unix::fs::symlink("../..", d.join("loop")).unwrap();
    }
    fs::create_dir_all(top.join("links")).unwrap();
    for i in (0..12).step_by(3) {
        std::os::unix::fs::symlink(format!("../real/r{i:02}"), top.join(format!("links/to{i:02}"))).unwrap();
    }
    std::os::unix::fs::symlink("../real", top.join("links/all")).unwrap();
    std::os::unix::fs::symlink("real/r05/sub", top.join("a_sub")).unwrap();
    std::os::unix::fs::symlink("real/r07/sub", top.join("z_sub")).unwrap();
}

#[test]
fn directories_reached_through_links_count_at_dus_first_place() {
    let dir = tempfile::tempdir().unwrap();
    build_links(dir.path());
    let root = dir.path();
    let du = references::gnu_du();
    let cases: &[&[&str]] = &[
        &["-L", "l"],
        &["-L", "-a", "l"],
        &["-L", "-S", "l"],
        &["-L", "-s", "l"],
        &["-L", "-l", "-a", "l"],
        &["-L", "-l", "-s", "l"],
        &["-L", "l/links", "l/real", "l"],
        &["-L", "-c", "l/real/r03", "l/links"],
    ];
    for args in cases {
        same_as_du_on_every_thread_count(args, root, du.as_ref());
    }
}
