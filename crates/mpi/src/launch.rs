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
    let number = |v: &str| number_in(&get, v);
    VARIABLES.iter().find_map(|&(size, rank)| {
        let tasks = number(size).filter(|&n| n > 1)?;
        Some(Launched {
            tasks,
            rank: number(rank),
        })
    })
}

/// The number a launcher's variable holds, if it holds one.
fn number_in(get: &impl Fn(&str) -> Option<String>, variable: &str) -> Option<u64> {
    get(variable)?.trim().parse().ok()
}

/// [`launched_in`] the process's environment.
pub fn launched() -> Option<Launched> {
    launched_in(|v| std::env::var(v).ok())
}

/// How many tasks of the job run on this node, as its launcher says:
/// Open MPI's `OMPI_COMM_WORLD_LOCAL_SIZE`, Hydra's `MPI_LOCALNRANKS`, or
/// Slurm's step tasks spread over its nodes (`SLURM_STEP_NUM_TASKS` ÷
/// `SLURM_STEP_NUM_NODES`, rounded up). The tasks of one node share its
/// file system client, and so the requests it keeps in flight.
///
/// ```
/// use fnd_mpi::launch::tasks_on_this_node_in;
/// let env = |pairs: &'static [(&str, &str)]| {
///     move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
/// };
/// assert_eq!(tasks_on_this_node_in(env(&[("OMPI_COMM_WORLD_LOCAL_SIZE", "8")])), Some(8));
/// assert_eq!(tasks_on_this_node_in(env(&[("SLURM_STEP_NUM_TASKS", "10"), ("SLURM_STEP_NUM_NODES", "4")])), Some(3));
/// assert_eq!(tasks_on_this_node_in(env(&[("OMPI_COMM_WORLD_LOCAL_SIZE", "0")])), None);
/// assert_eq!(tasks_on_this_node_in(env(&[])), None);
/// ```
pub fn tasks_on_this_node_in(get: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let number = |v: &str| number_in(&get, v).filter(|&n| n > 0);
    number("OMPI_COMM_WORLD_LOCAL_SIZE")
        .or_else(|| number("MPI_LOCALNRANKS"))
        .or_else(|| Some(number("SLURM_STEP_NUM_TASKS")?.div_ceil(number("SLURM_STEP_NUM_NODES")?)))
}

/// [`tasks_on_this_node_in`] the process's environment.
pub fn tasks_on_this_node() -> Option<u64> {
    tasks_on_this_node_in(|v| std::env::var(v).ok())
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

/// What a process that may be the only task of a launcher (`mpirun -n 1`)
/// does first, before any thread: write to the launcher's own stdout and
/// stderr ([`crate::stdio`]) rather than through Open MPI's pseudo-terminal,
/// and run on every core it was given ([`undo_default_binding`]).
pub fn alone_under_launcher() {
    if crate::stdio::under_open_mpi() {
        crate::stdio::adopt_launcher_output();
    }
    undo_default_binding();
}

/// What a job on one node starts fastest with, as variables to set and
/// their values, when that is Open MPI's job: every rank of the job is on
/// this node (`OMPI_COMM_WORLD_LOCAL_SIZE` equals `OMPI_COMM_WORLD_SIZE`),
/// so each rank decides the same. A variable the user set is left as it is.
///
/// - The point-to-point layer `ob1` (`OMPI_MCA_pml`). Open MPI's default
///   tries each network layer it was built with, and Debian's probes PSM,
///   PSM2 and libfabric in turn: `mpirun -n 2` of a program that only
///   starts and ends MPI took 312 ms here with the default and 104 ms with
///   `ob1` (2026-11-27, hyperfine, 8 runs). `ob1` still carries messages
///   between ranks on one node through shared memory.
/// - A topology of cores and memory without I/O devices (hwloc's
///   `HWLOC_COMPONENTS`, `HWLOC_PLUGINS_BLACKLIST`): each rank's `MPI_Init`
///   read every PCI device's configuration space, which a virtual machine
///   answers slowly, and loaded the OpenCL, X11 and libxml2 plugins; the
///   devices' places only help choose among network cards, and ranks on
///   one node talk through shared memory. The CPU time of that program's
///   `mpirun -n 2` went from 92–101 ms to 72–76 ms (2026-11-27, `perf
///   stat`, 6 runs each), and `mpirun -n 4 fnd -u .` of a 60k-entry tree
///   from 149 ms to 127 ms.
///
/// ```
/// use fnd_mpi::launch::one_node_settings_in;
/// let env = |pairs: &'static [(&str, &str)]| {
///     move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| x.to_string())
/// };
/// const ONE_NODE: [(&str, &str); 2] = [("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "4")];
/// assert!(one_node_settings_in(env(&ONE_NODE)).contains(&("OMPI_MCA_pml", "ob1")));
/// const TWO_NODES: [(&str, &str); 2] = [("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "2")];
/// assert!(one_node_settings_in(env(&TWO_NODES)).is_empty());
/// ```
pub fn one_node_settings_in(get: impl Fn(&str) -> Option<String>) -> Vec<(&'static str, &'static str)> {
    const SETTINGS: [(&str, &str); 3] = [
        ("OMPI_MCA_pml", "ob1"),
        ("HWLOC_COMPONENTS", "-pci,-linuxio"),
        (
            "HWLOC_PLUGINS_BLACKLIST",
            "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml",
        ),
    ];
    let number = |v: &str| number_in(&get, v);
    let one_node =
        number("OMPI_COMM_WORLD_SIZE").is_some_and(|world| number("OMPI_COMM_WORLD_LOCAL_SIZE") == Some(world));
    if !one_node {
        return Vec::new();
    }
    SETTINGS
        .into_iter()
        .filter(|(variable, _)| get(variable).is_none())
        .collect()
}

/// What a rank changes in how its launcher set it up, before it starts
/// any thread (the threads inherit the cores, and the environment must
/// not change while one may read it): Open MPI's default binding
/// ([`undo_default_binding`]) and, for a job on one node, what starts
/// fastest ([`one_node_settings_in`]).
pub fn before_threads() {
    undo_default_binding();
    for (variable, value) in one_node_settings_in(|v| std::env::var(v).ok()) {
        std::env::set_var(variable, value);
    }
}

/// The addresses of the launcher's PMIx server, which each task reaches
/// over TCP (`PMIX_SERVER_URI41` and its older spellings: `NAMESPACE;tcp4://127.0.0.1:53119`).
///
/// ```
/// use fnd_mpi::launch::pmix_server_addresses_in;
/// let env = |v: &str| (v == "PMIX_SERVER_URI41").then(|| "607453184.0;tcp4://127.0.0.1:53119".to_string());
/// assert_eq!(pmix_server_addresses_in(env), ["127.0.0.1:53119".parse().unwrap()]);
/// ```
pub fn pmix_server_addresses_in(get: impl Fn(&str) -> Option<String>) -> Vec<std::net::SocketAddr> {
    const URIS: [&str; 5] = [
        "PMIX_SERVER_URI41",
        "PMIX_SERVER_URI4",
        "PMIX_SERVER_URI3",
        "PMIX_SERVER_URI21",
        "PMIX_SERVER_URI2",
    ];
    let mut found = Vec::new();
    for uri in URIS.iter().filter_map(|v| get(v)) {
        let Some((_, at)) = uri.split_once(';') else { continue };
        let address = ["tcp4://", "tcp6://", "tcp://"]
            .iter()
            .find_map(|scheme| at.strip_prefix(scheme));
        if let Some(address) = address.and_then(|a| a.parse().ok()) {
            if !found.contains(&address) {
                found.push(address);
            }
        }
    }
    found
}

/// Makes this task's connections to its launcher's PMIx server
/// ([`pmix_server_addresses_in`]) send each message at once (TCP_NODELAY);
/// how many it changed. Call it once MPI is up, when they exist.
///
/// The PMIx client (4.2, Debian's) leaves Nagle's algorithm on, and
/// `MPI_Finalize` sends the server a few small messages in a row: the
/// later ones wait for the acknowledgement of the first, which the server
/// delays by the kernel's 40 ms. `MPI_Finalize` took 45 ms in each rank
/// here, and 3 ms with this (2026-11-27). What the messages say does not
/// change, only when they leave.
pub fn no_delay_to_launcher() -> usize {
    use std::os::fd::{BorrowedFd, RawFd};
    let servers = pmix_server_addresses_in(|v| std::env::var(v).ok());
    if servers.is_empty() {
        return 0;
    }
    let Ok(open) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let mut changed = 0;
    for fd in open.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok()) {
        // SAFETY: only asked for its peer, and changed if it is a server's
        // socket. Another thread may close the number meanwhile (or reuse
        // it for a file or this listing's directory): `getpeername` then
        // fails, or names no server.
        let socket = unsafe { BorrowedFd::borrow_raw(fd) };
        let peer = rustix::net::getpeername(socket).ok().flatten();
        let peer = peer.and_then(|p| std::net::SocketAddr::try_from(p).ok());
        if peer.is_some_and(|p| servers.contains(&p)) && rustix::net::sockopt::set_tcp_nodelay(socket, true).is_ok() {
            changed += 1;
        }
    }
    changed
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

    #[test]
    fn only_a_job_on_one_node_gets_the_settings_nobody_chose() {
        let world = ("OMPI_COMM_WORLD_SIZE", "3");
        let here = ("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
        let names =
            |e: &[(&'static str, &'static str)]| one_node_settings_in(env(e)).iter().map(|s| s.0).collect::<Vec<_>>();
        assert_eq!(
            names(&[world, here]),
            ["OMPI_MCA_pml", "HWLOC_COMPONENTS", "HWLOC_PLUGINS_BLACKLIST"]
        );
        let chosen = [("OMPI_MCA_pml", "ucx"), ("HWLOC_COMPONENTS", "-opencl")];
        assert_eq!(names(&[world, here, chosen[0], chosen[1]]), ["HWLOC_PLUGINS_BLACKLIST"]);
        assert!(names(&[world, ("OMPI_COMM_WORLD_LOCAL_SIZE", "1")]).is_empty());
        // Not Open MPI's job: where its ranks are is not known this way.
        assert!(names(&[("PMI_SIZE", "3"), ("PMI_LOCAL_SIZE", "3")]).is_empty());
        assert!(names(&[world]).is_empty());
    }

    #[test]
    fn the_pmix_server_is_found_in_each_spelling_once() {
        let uri = "1.0;tcp4://127.0.0.1:53119";
        let same = [("PMIX_SERVER_URI41", uri), ("PMIX_SERVER_URI2", uri)];
        assert_eq!(pmix_server_addresses_in(env(&same)).len(), 1);
        let v6 = [("PMIX_SERVER_URI3", "prterun-vm-1@0.0;tcp6://[fd00::2]:4000")];
        assert_eq!(pmix_server_addresses_in(env(&v6)), ["[fd00::2]:4000".parse().unwrap()]);
        for garbage in [
            "",
            "1.0",
            "1.0;usock:/tmp/x",
            "1.0;tcp4://localhost:1",
            "1.0;tcp4://127.0.0.1",
        ] {
            assert!(
                pmix_server_addresses_in(env(&[("PMIX_SERVER_URI4", garbage)])).is_empty(),
                "{garbage}"
            );
        }
    }
}
