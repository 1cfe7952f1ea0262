//! Whether this process is one of several tasks an MPI launcher started.
//!
//! A build of `fnd` or `fdu` without MPI support that `mpirun -n 4` starts
//! would walk the whole tree four times and print it four times; the
//! binaries ask [`launched_tasks`] first and refuse in one line instead.
//!
//! The launchers each leave their own mark in every task's environment:
//! - Open MPI's `mpirun`/`mpiexec` (and PRRTE's `prterun`): `OMPI_COMM_WORLD_SIZE`;
//! - MPICH's and Intel MPI's Hydra, and `srun --mpi=pmi2`: `PMI_SIZE`;
//! - Slurm's `srun`: `SLURM_STEP_NUM_TASKS`, the number of tasks of the job step.
//!
//! `SLURM_NTASKS` is deliberately not read: `sbatch --ntasks=64` and
//! `salloc -n 64` put it in the environment of the batch script or the
//! shell itself, where a plain `fnd` (not under `srun`) is one process and
//! must run. The step variables (`SLURM_STEP_ID`, `SLURM_STEP_NUM_TASKS`)
//! are set by `srun` for the tasks it launches, not by `sbatch` for the
//! batch script. One case is refused that could run: a plain command in a
//! shell started by `srun -n 4 --pty bash` inherits that step's count of 4.

/// The variables read, in the order they are read.
pub const VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"];

/// The number of tasks the launcher started, when it is more than one
/// (the first of [`VARIABLES`] that holds a number greater than 1).
///
/// ```
/// // Read from the environment the caller passes, so this example does
/// // not depend on how its test runner was started.
/// use fnd_mpi::launch::launched_tasks_in;
/// assert_eq!(launched_tasks_in(|_| None), None);
/// assert_eq!(launched_tasks_in(|v| (v == "OMPI_COMM_WORLD_SIZE").then(|| "4".into())), Some(4));
/// assert_eq!(launched_tasks_in(|v| (v == "PMI_SIZE").then(|| "1".into())), None);
/// assert_eq!(launched_tasks_in(|v| (v == "SLURM_NTASKS").then(|| "8".into())), None);
/// ```
pub fn launched_tasks_in(get: impl Fn(&str) -> Option<String>) -> Option<u64> {
    VARIABLES
        .iter()
        .filter_map(|v| get(v)?.trim().parse::<u64>().ok())
        .find(|&n| n > 1)
}

/// [`launched_tasks_in`] the process's environment.
pub fn launched_tasks() -> Option<u64> {
    launched_tasks_in(|v| std::env::var(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |v| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
    }

    #[test]
    fn each_launcher_is_seen() {
        assert_eq!(launched_tasks_in(env(&[("OMPI_COMM_WORLD_SIZE", "2")])), Some(2));
        assert_eq!(launched_tasks_in(env(&[("PMI_SIZE", "16")])), Some(16));
        assert_eq!(launched_tasks_in(env(&[("SLURM_STEP_NUM_TASKS", "3")])), Some(3));
    }

    #[test]
    fn one_task_a_batch_script_and_garbage_are_not() {
        assert_eq!(launched_tasks_in(env(&[("OMPI_COMM_WORLD_SIZE", "1")])), None);
        // What sbatch --ntasks=4 leaves for a batch script that runs fnd itself.
        let batch = [
            ("SLURM_NTASKS", "4"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "0"),
        ];
        assert_eq!(launched_tasks_in(env(&batch)), None);
        assert_eq!(launched_tasks_in(env(&[("PMI_SIZE", "many")])), None);
        assert_eq!(launched_tasks_in(env(&[("PMI_SIZE", "")])), None);
    }
}
