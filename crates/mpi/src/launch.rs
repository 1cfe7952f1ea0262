//! Whether this process is one of several tasks an MPI launcher started,
//! and what the launcher did to it that a walk with threads undoes.
//!
//! A build of `fnd` or `fdu` without MPI support that `mpirun -n 4` starts
//! would walk the whole tree four times and print it four times; the
//! binaries ask [`launched`] first and refuse in one line instead.
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

/// The variables read, in the order they are read: each launcher's count
/// of tasks, and the variable that holds the task's rank beside it.
pub const VARIABLES: [(&str, &str); 3] = [
    ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
    ("PMI_SIZE", "PMI_RANK"),
    ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
];

/// This process as one task of several that a launcher started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launched {
    /// How many tasks (more than one).
    pub tasks: u64,
    /// This task's rank among them, when the launcher says.
    pub rank: Option<u64>,
}

impl Launched {
    /// Whether this task should be the one to say something for all of
    /// them (rank 0, or any task when the rank is unknown).
    pub fn speaks(&self) -> bool {
        self.rank.unwrap_or(0) == 0
    }
}

/// The tasks a launcher started, when it started more than one (the first
/// of [`VARIABLES`] that holds a number greater than 1).
///
/// ```
/// // Read from the environment the caller passes, so this example does
/// // not depend on how its test runner was started.
/// use fnd_mpi::launch::{launched_in, Launched};
/// let env = |pairs: &'static [(&str, &str)]| {
///     move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
/// };
/// assert_eq!(launched_in(env(&[])), None);
/// assert_eq!(
///     launched_in(env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")])),
///     Some(Launched { tasks: 4, rank: Some(2) })
/// );
/// assert_eq!(launched_in(env(&[("PMI_SIZE", "1")])), None);
/// // What sbatch --ntasks=8 leaves for the batch script itself.
/// assert_eq!(launched_in(env(&[("SLURM_NTASKS", "8"), ("SLURM_PROCID", "0")])), None);
/// ```
pub fn launched_in(get: impl Fn(&str) -> Option<String>) -> Option<Launched> {
    let number = |v: &str| get(v)?.trim().parse::<u64>().ok();
    VARIABLES.iter().find_map(|&(size, rank)| {
        let tasks = number(size).filter(|&n| n > 1)?;
        Some(Launched {
            tasks,
            rank: number(rank),
        })
    })
}

/// [`launched_in`] the process's environment.
pub fn launched() -> Option<Launched> {
    launched_in(|v| std::env::var(v).ok())
}

/// Whether Open MPI bound this task to its cores by its own default, not
/// because the command line or the environment asked (`--bind-to`,
/// `--map-by`, `--cpus-per-rank` each leave their variable beside
/// `OMPI_MCA_orte_bound_at_launch`).
///
/// ```
/// use fnd_mpi::launch::bound_by_default_in;
/// let env = |pairs: &'static [(&str, &str)]| {
///     move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
/// };
/// assert!(bound_by_default_in(env(&[("OMPI_MCA_orte_bound_at_launch", "1")])));
/// assert!(!bound_by_default_in(env(&[
///     ("OMPI_MCA_orte_bound_at_launch", "1"),
///     ("OMPI_MCA_hwloc_base_binding_policy", "core"),
/// ])));
/// assert!(!bound_by_default_in(env(&[])));
/// ```
pub fn bound_by_default_in(get: impl Fn(&str) -> Option<String>) -> bool {
    const ASKED: [&str; 3] = [
        "OMPI_MCA_hwloc_base_binding_policy",
        "OMPI_MCA_rmaps_base_mapping_policy",
        "OMPI_MCA_rmaps_base_cpus_per_rank",
    ];
    get("OMPI_MCA_orte_bound_at_launch").as_deref() == Some("1") && ASKED.iter().all(|v| get(v).is_none())
}

/// Gives this process the cores of its launcher (its parent: `mpirun`,
/// or Open MPI's daemon on another node) when Open MPI bound it to fewer
/// by its own default ([`bound_by_default_in`]); true if it did. Under a
/// wrapper script, bound as the process is, nothing changes. Call it
/// before the process starts any thread: the others inherit it.
///
/// That default (one core per rank when a job has at most two ranks)
/// suits a rank of one thread. A rank here walks with threads of its
/// own, and rank 0 walks alone while the others start MPI: on two cores
/// with two ranks, bound, it walks on one core and the other waits. An
/// explicit `--bind-to`, `--map-by` or `--cpus-per-rank` is kept.
pub fn undo_default_binding() -> bool {
    if !bound_by_default_in(|v| std::env::var(v).ok()) {
        return false;
    }
    let Some(launcher) = rustix::process::getppid() else {
        return false;
    };
    let (Ok(mine), Ok(theirs)) = (
        rustix::thread::sched_getaffinity(None),
        rustix::thread::sched_getaffinity(Some(launcher)),
    ) else {
        return false;
    };
    if theirs.count() <= mine.count() {
        return false;
    }
    rustix::thread::sched_setaffinity(None, &theirs).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |v| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
    }

    fn tasks(pairs: &[(&str, &str)]) -> Option<u64> {
        launched_in(env(pairs)).map(|l| l.tasks)
    }

    #[test]
    fn each_launcher_is_seen_with_its_rank() {
        assert_eq!(tasks(&[("OMPI_COMM_WORLD_SIZE", "2")]), Some(2));
        assert_eq!(tasks(&[("PMI_SIZE", "16")]), Some(16));
        assert_eq!(tasks(&[("SLURM_STEP_NUM_TASKS", "3")]), Some(3));
        let srun = launched_in(env(&[("SLURM_STEP_NUM_TASKS", "3"), ("SLURM_PROCID", "1")])).unwrap();
        assert_eq!(srun.rank, Some(1));
        assert!(!srun.speaks());
        assert!(launched_in(env(&[("PMI_SIZE", "2")])).unwrap().speaks());
    }

    #[test]
    fn one_task_a_batch_script_and_garbage_are_not() {
        assert_eq!(tasks(&[("OMPI_COMM_WORLD_SIZE", "1")]), None);
        // What sbatch --ntasks=4 leaves for a batch script that runs fnd itself.
        let batch = [
            ("SLURM_NTASKS", "4"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_JOB_ID", "7"),
            ("SLURM_PROCID", "0"),
        ];
        assert_eq!(tasks(&batch), None);
        assert_eq!(tasks(&[("PMI_SIZE", "many")]), None);
        assert_eq!(tasks(&[("PMI_SIZE", "")]), None);
    }

    #[test]
    fn only_open_mpis_own_binding_is_undone() {
        let bound = ("OMPI_MCA_orte_bound_at_launch", "1");
        assert!(bound_by_default_in(env(&[bound, ("OMPI_COMM_WORLD_SIZE", "2")])));
        // What --bind-to, --map-by and --cpus-per-rank leave beside it.
        for asked in [
            ("OMPI_MCA_hwloc_base_binding_policy", "core"),
            ("OMPI_MCA_rmaps_base_mapping_policy", "ppr:1:core"),
            ("OMPI_MCA_rmaps_base_cpus_per_rank", "1"),
        ] {
            assert!(!bound_by_default_in(env(&[bound, asked])), "{asked:?}");
        }
        // --bind-to none.
        assert!(!bound_by_default_in(env(&[(
            "OMPI_MCA_hwloc_base_binding_policy",
            "none"
        )])));
    }
}
