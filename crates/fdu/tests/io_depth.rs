//! `--io-depth N`: how many directory reads may wait on the file system at
//! once. It changes how the walk waits, never what it finds.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

fn fdu(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdu"))
        .arg0("fdu") // messages name the program as started
        .args(args)
        .current_dir(cwd)
        .env_remove("BLOCK_SIZE")
        .env_remove("DU_BLOCK_SIZE")
        .env_remove("BLOCKSIZE")
        .output()
        .unwrap()
}

/// Wide and deep enough for a pool to have work for many readers.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for a in 0..12 {
        for b in 0..6 {
            let d = dir.path().join(format!("t/{a}/{b}"));
            fs::create_dir_all(&d).unwrap();
            for f in 0..5 {
                fs::write(d.join(format!("f{f}")), vec![b'x'; (a * 1000 + b * 100 + f) * 7]).unwrap();
            }
        }
    }
    dir
}

fn sorted_lines(o: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn any_depth_gives_the_same_sizes() {
    let dir = tree();
    let plain = fdu(&["-a", "t"], dir.path());
    assert!(plain.status.success());
    assert_eq!(sorted_lines(&plain).len(), 1 + 12 + 72 + 360);
    for args in [
        &["--io-depth", "1"][..],
        &["--io-depth=64"],
        &["-j1", "--io-depth", "8"],
        &["-j4", "--io-depth", "2"],
    ] {
        let o = fdu(&[args, &["-a", "t"]].concat(), dir.path());
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stderr.is_empty(), "{args:?}");
        assert_eq!(sorted_lines(&o), sorted_lines(&plain), "{args:?}");
    }
    let summary = fdu(&["-s", "--io-depth", "3", "t"], dir.path());
    assert_eq!(sorted_lines(&summary), sorted_lines(&fdu(&["-s", "t"], dir.path())));
}

#[test]
fn a_bad_depth_is_a_usage_error() {
    let dir = tree();
    for (args, shown) in [
        (&["--io-depth", "0"][..], "'0'"),
        (&["--io-depth=x"], "'x'"),
        (&["--io-depth=-3"], "'-3'"),
    ] {
        let o = fdu(&[args, &["t"]].concat(), dir.path());
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.lines().next(),
            Some(format!("fdu: invalid --io-depth argument {shown}").as_str()),
            "{args:?}"
        );
    }
    let o = fdu(&["--io-depth"], dir.path());
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn help_documents_the_option() {
    let o = fdu(&["--help"], Path::new("."));
    let help = String::from_utf8_lossy(&o.stdout);
    let line = help
        .lines()
        .find(|l| l.contains("--io-depth"))
        .expect("--io-depth in --help");
    assert!(
        line.contains("<N>") || line.contains("=N") || line.contains(" N"),
        "{line}"
    );
    assert!(help.contains("Most directory reads that may wait on the file system at once"));
}
