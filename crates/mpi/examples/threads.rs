//! Threading level `Multiple` at work: on every rank, several threads send
//! to and receive from every other rank at once, small messages and large
//! ones (sent by rendezvous), each checked. Prints `threads ok` on rank 0.
//! `mpirun -n 4 threads [THREADS] [ROUNDS]`

use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};

use fnd_mpi::World;

fn payload(from: usize, thread: usize, round: usize) -> Vec<u8> {
    // Every third message is large enough to go by rendezvous.
    let len = if round.is_multiple_of(3) {
        256 << 10
    } else {
        1 + round % 64
    };
    (0..len).map(|i| (from * 31 + thread * 7 + round + i) as u8).collect()
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a number"));
    let threads = args.next().unwrap_or(4);
    let rounds = args.next().unwrap_or(30);
    let world = World::init("threads").unwrap_or_else(|e| e.exit());
    let (rank, size) = (world.rank(), world.size());
    std::thread::scope(|s| {
        for t in 0..threads {
            // Each thread its own tag; a sender and a receiver per tag, so
            // a blocking send always finds its receive.
            s.spawn(move || {
                let comm = SimpleCommunicator::world();
                for round in 0..rounds {
                    for peer in (0..size).filter(|&p| p != rank) {
                        comm.process_at_rank(peer as i32)
                            .send_with_tag(&payload(rank, t, round)[..], t as i32);
                    }
                }
            });
            s.spawn(move || {
                let comm = SimpleCommunicator::world();
                for round in 0..rounds {
                    for peer in (0..size).filter(|&p| p != rank) {
                        let (got, _) = comm.process_at_rank(peer as i32).receive_vec_with_tag::<u8>(t as i32);
                        assert!(got == payload(peer, t, round), "thread {t} round {round} from {peer}");
                    }
                }
            });
        }
    });
    use mpi::collective::CommunicatorCollectives;
    SimpleCommunicator::world().barrier();
    if rank == 0 {
        println!("threads ok: {size} ranks, {threads} threads each way, {rounds} rounds");
    }
}
