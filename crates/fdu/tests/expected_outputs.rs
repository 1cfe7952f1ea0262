//! The core of GNU du's behaviour, checked against outputs stored in
//! `tests/expected/NAME.out` (as bfs keeps its `.out` files), so the suite
//! checks it whether or not du is installed: `-a -s -d -c -S --inodes -b
//! -h`, block sizes, `--exclude`, `-X`, `-0`, `-t`, `--time`, hard links
//! over several operands, symlinks, a missing operand.
//!
//! The tree is built the same way every time (fixed names, sizes and
//! modification times; a sparse file) and the lines are sorted (du prints
//! in post-order, fdu as directories complete). Disk usage depends on the
//! file system, so the tree is built on tmpfs with 4 KiB pages, where it
//! does not vary: a file takes whole pages, a directory no block and
//! `20 * (entries + 2)` bytes of apparent size. Without such a tmpfs the
//! cases that count sizes are skipped, saying so (a failure under
//! `FND_REQUIRE_REFERENCE=1`); the `--inodes` cases run anywhere.
//!
//! Hard links: du counts a file at the first link it meets, and which one
//! that is within one operand depends on the order the file system lists
//! names in. Here every multiply-linked file has one link per operand
//! directory (`h1`, `h2`, `h3`), so the operands' order decides, as it
//! does in du.
//!
//! When GNU du is installed every case is run with du too, and du must
//! agree with the stored output: the files are du's behaviour, not a
//! snapshot of fdu's. After a deliberate change of output, or to add a
//! case, write the files again and review the diff:
//!
//! ```text
//! FND_BLESS=1 cargo test -p fdu --test expected_outputs
//! ```

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use fnd_test_support::expected::{self, set_mtime, Expected, Run};
use fnd_test_support::hostile::scratch_dir;
use fnd_test_support::references;

/// 2001-09-09 01:46:40 UTC; each entry is an hour apart from the last.
const EPOCH: i64 = 1_000_000_000;
const HOUR: i64 = 3600;

/// Files: path and size.
const FILES: &[(&str, u64)] = &[
    ("t/one", 1),
    ("t/x.rs", 20),
    ("t/name with space", 10),
    ("t/new\nline", 3),
    ("t/a/k1500", 1500),
    ("t/a/b/big", 200_000),
    ("t/a/b/y.rs", 30),
    ("t/a/b/c/empty", 0),
    ("t/d/e/f", 5000),
    ("t/d/many0", 1),
    ("t/d/many1", 301),
    ("t/d/many2", 601),
    ("t/d/many3", 901),
    ("t/d/many4", 4097),
    ("t/d/many5", 8193),
    ("h1/a", 9000),
    ("h1/solo", 100),
    ("h2/b", 3000),
];

/// Sparse files: path and apparent size (no block written).
const SPARSE: &[(&str, u64)] = &[("t/d/sparse", 50 << 20)];

/// Hard links: new name, existing name.
const HARD_LINKS: &[(&str, &str)] = &[
    ("h2/a_again", "h1/a"),
    ("h3/sub/a_third", "h1/a"),
    ("h3/b_again", "h2/b"),
];

const SYMLINKS: &[(&str, &str)] = &[("t/to_file", "one"), ("t/to_dir", "a/b"), ("t/dangling", "nowhere")];

/// Every directory, deepest first.
const DIRS: &[&str] = &[
    "t/a/b/c", "t/a/b", "t/a", "t/d/e", "t/d", "t/empty", "t", "h1", "h2", "h3/sub", "h3",
];

fn build(base: &Path) {
    for dir in DIRS {
        fs::create_dir_all(base.join(dir)).unwrap();
    }
    for (path, size) in FILES {
        fs::write(base.join(path), vec![b'x'; *size as usize]).unwrap();
    }
    for (path, size) in SPARSE {
        fs::File::create(base.join(path)).unwrap().set_len(*size).unwrap();
    }
    for (link, target) in HARD_LINKS {
        fs::hard_link(base.join(target), base.join(link)).unwrap();
    }
    for (link, target) in SYMLINKS {
        symlink(target, base.join(link)).unwrap();
    }
    fs::write(base.join("patterns"), "many1*\nsparse\n").unwrap();
    fs::write(base.join("list"), b"t/a\0h1\0missing\0").unwrap();
    let names = FILES
        .iter()
        .chain(SPARSE)
        .map(|(p, _)| *p)
        .chain(SYMLINKS.iter().map(|(l, _)| *l))
        .chain(DIRS.iter().copied());
    for (i, path) in names.enumerate() {
        set_mtime(&base.join(path), EPOCH + i as i64 * HOUR);
    }
}

/// Whether `base` counts disk usage as the stored outputs do: tmpfs with
/// 4 KiB pages (a 1-byte file takes 8 blocks, an empty directory none and
/// 40 bytes).
fn sizes_are_fixed(base: &Path) -> Result<(), String> {
    let probe = base.join("probe");
    fs::create_dir(&probe).unwrap();
    fs::write(probe.join("f"), b"x").unwrap();
    fs::create_dir(probe.join("d")).unwrap();
    let (file, dir) = (
        fs::metadata(probe.join("f")).unwrap(),
        fs::metadata(probe.join("d")).unwrap(),
    );
    fs::remove_dir_all(&probe).unwrap();
    if (file.blocks(), dir.blocks(), dir.size()) == (8, 0, 40) {
        Ok(())
    } else {
        Err(format!(
            "{} is not tmpfs with 4 KiB pages (a 1-byte file has {} blocks, an empty directory {} blocks and {} bytes)",
            base.display(),
            file.blocks(),
            dir.blocks(),
            dir.size()
        ))
    }
}

/// One stored case: its file name, the arguments, and whether it counts
/// sizes (which depend on the file system) or only inodes.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    sizes: bool,
}

const fn sizes(name: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        name,
        args,
        sizes: true,
    }
}

const fn inodes(name: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        name,
        args,
        sizes: false,
    }
}

const CASES: &[Case] = &[
    // What is printed.
    sizes("default", &["t"]),
    sizes("all", &["-a", "t"]),
    sizes("summarize", &["-s", "t"]),
    sizes("total", &["-c", "t/a", "t/d"]),
    sizes("summarize_total", &["-sc", "t", "h1"]),
    sizes("max_depth_1", &["-d", "1", "t"]),
    sizes("max_depth_0_all", &["-a", "--max-depth=0", "t"]),
    sizes("all_max_depth_2", &["-a", "-d2", "t"]),
    sizes("separate_dirs", &["-S", "t"]),
    sizes("separate_dirs_all", &["-S", "-a", "t"]),
    sizes("null", &["-0", "-a", "t"]),
    // How sizes are counted and shown.
    sizes("bytes_all", &["-b", "-a", "t"]),
    sizes("apparent_all", &["--apparent-size", "-a", "t"]),
    sizes("apparent_human", &["--apparent-size", "-h", "t"]),
    sizes("human_all", &["-h", "-a", "t"]),
    sizes("si_all", &["--si", "-a", "t"]),
    sizes("kibibytes", &["-k", "t"]),
    sizes("mebibytes_all", &["-m", "-a", "t"]),
    sizes("block_size_1k_all", &["-B1K", "-a", "t"]),
    sizes("block_size_2_all", &["-B", "2", "-a", "t"]),
    sizes("block_size_kb", &["--block-size=KB", "t"]),
    sizes("threshold", &["-a", "-b", "-t", "5000", "t"]),
    sizes("threshold_negative", &["-a", "-b", "-t", "-1K", "t"]),
    // What is left out.
    sizes("exclude", &["-a", "-b", "--exclude=*.rs", "--exclude=b", "t"]),
    sizes("exclude_path", &["-a", "-b", "--exclude=t/d/e", "t"]),
    sizes("exclude_operand", &["-b", "--exclude=t", "t"]),
    sizes("exclude_from", &["-a", "-b", "-X", "patterns", "t"]),
    // Operands: several, nested, through symlinks, missing, from a file.
    sizes("operands_nested", &["-b", "t/a", "t"]),
    sizes("operands_outer_first", &["-b", "t", "t/a"]),
    sizes("operand_symlink", &["-a", "-b", "t/to_dir"]),
    sizes("operand_symlink_followed", &["-a", "-b", "-D", "t/to_dir"]),
    sizes("operands_dereferenced", &["-b", "-s", "-H", "t/to_dir", "t/to_file"]),
    sizes("operand_missing", &["-b", "t/a", "missing", "t/d"]),
    sizes("files0_from", &["-b", "--files0-from=list"]),
    // Hard links: counted once, at the first link met.
    sizes("hard_links", &["-a", "-b", "h1", "h2", "h3"]),
    sizes("hard_links_reversed", &["-a", "-b", "h3", "h2", "h1"]),
    sizes("hard_links_blocks_total", &["-c", "-s", "h1", "h2", "h3"]),
    sizes("hard_links_counted_each", &["-a", "-b", "-l", "h1", "h2", "h3"]),
    // Times (TZ=UTC).
    sizes("time_all", &["--time", "-a", "-b", "t"]),
    sizes(
        "time_full_iso",
        &["--time", "--time-style=full-iso", "-s", "-b", "t", "h3"],
    ),
    // Inodes: the same on every file system.
    inodes("inodes_all", &["--inodes", "-a", "t"]),
    inodes("inodes_summarize", &["--inodes", "-s", "t", "h1", "h2", "h3"]),
    inodes("inodes_max_depth", &["--inodes", "-d", "1", "t"]),
    inodes("inodes_separate_dirs", &["--inodes", "-S", "t"]),
    inodes("inodes_hard_links", &["--inodes", "-a", "h3", "h1", "h2"]),
    inodes(
        "inodes_hard_links_counted_each",
        &["--inodes", "-l", "-c", "h1", "h2", "h3"],
    ),
    inodes("inodes_exclude", &["--inodes", "-a", "--exclude=e", "t/d"]),
];

fn run(mut cmd: Command, args: &[&str], cwd: &Path) -> Output {
    cmd.args(args)
        .current_dir(cwd)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("BLOCK_SIZE")
        .env_remove("DU_BLOCK_SIZE")
        .env_remove("BLOCKSIZE")
        .env_remove("POSIXLY_CORRECT")
        .env_remove("TIME_STYLE")
        .stdin(Stdio::null())
        .output()
        .expect("run")
}

fn render(case: &Case, out: &Output, replace: &[(&[u8], &[u8])]) -> String {
    let sep = if case.args.contains(&"-0") { 0 } else { b'\n' };
    let run = Run {
        args: case.args,
        stdout: &out.stdout,
        stderr: &out.stderr,
        code: out.status.code(),
    };
    run.render(sep, true, replace)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

#[test]
fn fdu_prints_the_stored_outputs() {
    let tmp = scratch_dir();
    let base = tmp.path();
    let with_sizes = match sizes_are_fixed(base) {
        Ok(()) => true,
        Err(why) if references::required() => panic!("{}=1 and {why}", references::REQUIRE_VAR),
        Err(why) => {
            references::skip(&format!("{why}: only the --inodes cases are checked"));
            false
        }
    };
    build(base);
    let stored = Expected::new(expected::dir_of(env!("CARGO_MANIFEST_DIR")));
    let du = references::gnu_du();
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in CASES.iter().filter(|c| with_sizes || !c.sizes) {
        checked += 1;
        // Started as `fdu` (messages name the program as it was started).
        let mut fdu = Command::new(env!("CARGO_BIN_EXE_fdu"));
        std::os::unix::process::CommandExt::arg0(&mut fdu, "fdu");
        let ours = run(fdu, case.args, base);
        let text = render(case, &ours, &[]);
        if let Err(e) = stored.check(case.name, &text) {
            failures.push(format!("fdu: {e}"));
            continue;
        }
        if let Some(du) = du.as_ref().filter(|_| !expected::blessing()) {
            let theirs = run(du.command(), case.args, base);
            let text = render(case, &theirs, &[(b"du: ", b"fdu: "), (b"'du --help'", b"'fdu --help'")]);
            if let Err(e) = stored.check_reference(case.name, du.version(), &text) {
                failures.push(e);
            }
        }
    }
    if with_sizes {
        let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        for stale in stored.stale(&names) {
            failures.push(format!("{}: no case writes it any more", stale.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} stored outputs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
