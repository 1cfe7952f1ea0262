//! What a launcher leaves in the environment (task counts and ranks, Open
//! MPI's binding, the node's share of the job, what a job on one node sets,
//! the PMIx server's address):
//! whatever the values, reading them gives an answer, never a panic. Run
//! with `cargo +nightly fuzz run launch_env`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fnd_mpi::launch::{
    bound_by_default_in, launched_in, one_node_settings_in, pmix_server_addresses_in, tasks_on_this_node_in,
};

/// The variables read, each given a value from the input in turn.
const NAMES: [&str; 18] = [
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_SIZE",
    "PMI_RANK",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_PROCID",
    "OMPI_MCA_orte_bound_at_launch",
    "OMPI_MCA_hwloc_base_binding_policy",
    "OMPI_MCA_pml",
    "PMIX_SERVER_URI41",
    "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI2",
    "MPI_LOCALNRANKS",
    "SLURM_STEP_NUM_NODES",
    "HWLOC_COMPONENTS",
    "HWLOC_PLUGINS_BLACKLIST",
];

fuzz_target!(|data: &[u8]| {
    // Values separated by NUL bytes; an empty value is an unset variable.
    let text = String::from_utf8_lossy(data);
    let values: Vec<&str> = text.split('\0').collect();
    let get = |name: &str| {
        let i = NAMES.iter().position(|n| *n == name)?;
        values.get(i).filter(|v| !v.is_empty()).map(|v| v.to_string())
    };
    if let Some(launched) = launched_in(get) {
        assert!(launched.tasks > 1);
    }
    let _ = bound_by_default_in(get);
    for (variable, _) in one_node_settings_in(get) {
        assert!(get(variable).is_none(), "{variable} was chosen");
    }
    if let Some(tasks) = tasks_on_this_node_in(get) {
        assert!(tasks > 0);
    }
    let servers = pmix_server_addresses_in(get);
    assert!(servers.len() <= 5);
});
