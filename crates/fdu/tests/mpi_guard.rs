//! A build of fdu without the `mpi` feature started by mpirun or srun as
//! several tasks refuses in one line (on task 0) and exits 2, instead of
//! printing the totals once per task (`tests/mpi.rs` runs the build with
//! it as a job); started any other way, either build runs.

use std::process::{Command, Output};

fn fdu(env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdu"));
    // Messages name the program as started: as `fdu`, they start "fdu: ".
    std::os::unix::process::CommandExt::arg0(&mut cmd, "fdu");
    cmd.args(["--inodes", "d"]).current_dir(dir.path());
    for (size, rank) in fnd_mpi::launch::VARIABLES {
        cmd.env_remove(size).env_remove(rank);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

#[cfg(not(feature = "mpi"))]
#[test]
fn started_as_several_mpi_tasks_it_refuses_in_one_line() {
    let line = "fdu: started as 3 MPI tasks, but this fdu was built without MPI support; rebuild with --features mpi\n";
    for (size, rank) in fnd_mpi::launch::VARIABLES {
        let out = fdu(&[(size, "3"), (rank, "0")]);
        assert_eq!(out.status.code(), Some(2), "{size}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), line, "{size}");
        assert!(out.stdout.is_empty(), "{size}");
        let out = fdu(&[(size, "3"), (rank, "2")]);
        assert_eq!(out.status.code(), Some(2), "{size}");
        assert!(out.stderr.is_empty() && out.stdout.is_empty(), "{size}");
    }
}

#[test]
fn started_as_one_process_it_runs() {
    let cases: [&[(&str, &str)]; 3] = [
        &[("PMI_SIZE", "1"), ("PMI_RANK", "0")],
        &[
            ("SLURM_NTASKS", "4"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_PROCID", "0"),
            ("SLURM_JOB_ID", "7"),
        ],
        &[],
    ];
    for env in cases {
        let out = fdu(env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"1\td\n", "{env:?}");
    }
}
