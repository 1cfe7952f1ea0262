//! A build without MPI started by mpirun or srun as several tasks refuses
//! in one line (on task 0) and exits 2, instead of printing the tree once
//! per task; started any other way, it runs.

use std::process::{Command, Output};

fn fnd(env: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("found"), b"").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fnd"));
    cmd.arg("found").current_dir(dir.path());
    for (size, rank) in fnd_mpi::launch::VARIABLES {
        cmd.env_remove(size).env_remove(rank);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

/// A build with MPI runs as one job instead (tests/mpi.rs).
#[cfg(not(feature = "mpi"))]
#[test]
fn started_as_several_mpi_tasks_it_refuses_in_one_line() {
    let line = "[fnd error]: started as 4 MPI tasks, but this build has no MPI support; rebuild with --features mpi\n";
    for (size, rank) in fnd_mpi::launch::VARIABLES {
        let out = fnd(&[(size, "4"), (rank, "0")]);
        assert_eq!(out.status.code(), Some(2), "{size}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), line, "{size}");
        assert!(out.stdout.is_empty(), "{size}");
        // The other tasks exit alike, silently: one line, not one per task.
        let out = fnd(&[(size, "4"), (rank, "3")]);
        assert_eq!(out.status.code(), Some(2), "{size}");
        assert!(out.stderr.is_empty() && out.stdout.is_empty(), "{size}");
    }
}

#[test]
fn started_as_one_process_it_runs() {
    // A single task; a Slurm batch script (sbatch --ntasks=4) running fnd
    // itself, without srun; and no launcher at all.
    let cases: [&[(&str, &str)]; 3] = [
        &[("OMPI_COMM_WORLD_SIZE", "1"), ("OMPI_COMM_WORLD_RANK", "0")],
        &[
            ("SLURM_NTASKS", "4"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_PROCID", "0"),
            ("SLURM_JOB_ID", "7"),
        ],
        &[],
    ];
    for env in cases {
        let out = fnd(env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"found\n", "{env:?}");
    }
}
