//! `fdu --by` as an MPI job (feature `mpi`): the ranks' tallies merged
//! on rank 0 give what one process gives. Run with
//! `cargo test -p fdu --features mpi --test by_mpi` (Open MPI's `mpirun`
//! on the PATH; as root, the test sets `OMPI_ALLOW_RUN_AS_ROOT` itself).
//! Every rank pauses after each directory, so that the other ranks steal
//! work from rank 0 even in a small tree.
#![cfg(feature = "mpi")]

use std::fs;
use std::path::Path;
use std::process::Command;

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// Directories enough to share, files of several extensions and
/// owners, and hard links across directories.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for d in 0..12 {
        for e in 0..3 {
            let sub = root.join(format!("d{d}/e{e}"));
            fs::create_dir_all(&sub).unwrap();
            for (i, ext) in ["rs", "TXT", "tar.gz", "noext"].iter().enumerate() {
                let name = if *ext == "noext" {
                    format!("f{i}")
                } else {
                    format!("f{i}.{ext}")
                };
                fs::write(sub.join(name), vec![b'x'; 100 * (d + 1) * (i + 1)]).unwrap();
            }
        }
    }
    fs::hard_link(root.join("d0/e0/f0.rs"), root.join("d7/e2/link.c")).unwrap();
    fs::hard_link(root.join("d0/e0/f0.rs"), root.join("d3/e1/link.h")).unwrap();
    if rustix::process::geteuid().is_root() {
        for (path, owner) in [
            ("d1", "1001:2001"),
            ("d2/e1/f1.TXT", "1002:2002"),
            ("d5/e0", "1003:2001"),
        ] {
            let status = Command::new("chown")
                .args(["-R", owner])
                .arg(root.join(path))
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    dir
}

fn fdu(ranks: Option<usize>, args: &[&str], cwd: &Path) -> (String, Option<i32>) {
    let mut cmd = match ranks {
        Some(n) => {
            let mut c = Command::new("mpirun");
            c.args(["-q", "--oversubscribe", "--bind-to", "none", "-n", &n.to_string(), FDU]);
            c
        }
        None => Command::new(FDU),
    };
    let out = cmd
        .args(args)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("FND_MPI_TEST_PAUSE_US", "3000")
        .output()
        .unwrap();
    assert!(
        out.status.success() || ranks.is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8(out.stdout).unwrap(), out.status.code())
}

#[test]
fn ranks_give_the_one_process_answer() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        eprintln!("mpirun not found: --by over MPI not checked");
        return;
    }
    let dir = tree();
    let cwd = dir.path();
    for args in [
        &["--by", "user,ext", "-b", "--top", "0", "t"][..],
        &["--by", "user", "t"],
        &["--by", "type,group", "-h", "-c", "--top", "3", "t"],
        &["--by", "ext", "--exclude", "d4", "-b", "t", "t/d1"],
    ] {
        let (alone, _) = fdu(None, args, cwd);
        assert!(!alone.is_empty());
        for n in [1, 3] {
            let (ranked, code) = fdu(Some(n), args, cwd);
            assert_eq!(code, Some(0), "{n} ranks, {args:?}");
            assert_eq!(ranked, alone, "{n} ranks, {args:?}");
        }
    }
}
