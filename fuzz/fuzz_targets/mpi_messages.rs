//! Messages between ranks: whatever the bytes, decoding returns a message
//! or an error (never a panic, never an allocation larger than the input
//! allows), a decoded message encodes back to the same bytes, and a rank's
//! protocol fed any sequence of decodable messages answers with errors,
//! not panics. Run with `cargo +nightly fuzz run mpi_messages`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fnd_mpi::codec::Message;
use fnd_mpi::protocol::{Config, Local, Node};

struct Pool;

impl Local for Pool {
    fn is_idle(&self) -> bool {
        false
    }
    fn take(&self, max: usize) -> Vec<Vec<u8>> {
        vec![b"item".to_vec(); max.min(2)]
    }
    fn put(&self, _items: Vec<Vec<u8>>) {}
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    // The walk's work items are opaque here: their encoding is fuzzed
    // where it lives, in fnd-walk (the target `handoff`).
    match mode % 2 {
        0 => {
            if let Ok(m) = Message::decode(rest) {
                assert_eq!(m.encode(), rest, "{m:?} has two encodings");
            }
        }
        _ => {
            // Frames of [from, idle (bit 0) and hungry (bit 1), length, bytes...]
            // to rank `mode / 2 % 4` of 4.
            let rank = usize::from(mode / 2 % 4);
            let mut node = Node::new(rank, 4, Config::default(), 1);
            let mut input = rest;
            let mut now = 0;
            while let [from, idle, len, tail @ ..] = input {
                let len = usize::from(*len).min(tail.len());
                let (bytes, next) = tail.split_at(len);
                input = next;
                if let Ok(m) = Message::decode(bytes) {
                    let _ = node.receive(usize::from(*from % 5), m, &Pool);
                }
                now += 100;
                node.step(now, idle & 1 == 1, idle & 2 == 2, &Pool);
                node.drain_outbox().for_each(|(to, b)| {
                    assert!(to < 4 && to != rank);
                    Message::decode(&b).expect("the protocol sends what decodes");
                });
            }
        }
    }
});
