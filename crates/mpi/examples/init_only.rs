//! MPI initialized and finalized, nothing else: the baseline of the
//! transport's measurements (`mpirun -n 2 init_only`).

fn main() {
    let world = fnd_mpi::World::init("init_only").unwrap_or_else(|e| e.exit());
    drop(world);
}
