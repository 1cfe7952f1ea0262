//! Out of memory, a process with [`fnd_walk::EndWhenExhausted`] as its
//! allocator ends with one line and status 1: no SIGABRT, no backtrace.

use std::process::Command;

#[global_allocator]
static ALLOCATOR: fnd_walk::EndWhenExhausted<std::alloc::System> =
    fnd_walk::EndWhenExhausted::new(std::alloc::System, "exhausted-test");

const TEST: &str = "out_of_memory_ends_with_one_line_and_status_1";
/// Set in the child, which then asks for more than its address space.
const CHILD: &str = "FND_TEST_EXHAUST";
const ASKED: usize = 2 << 30;

#[test]
fn out_of_memory_ends_with_one_line_and_status_1() {
    if std::env::var_os(CHILD).is_some() {
        let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(ASKED));
        println!("allocated {}", v.capacity());
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("RUST_BACKTRACE", "1");
    fnd_test_support::process::limit_address_space(&mut child, 1 << 30);
    let out = child.output().expect("the test binary starts");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}\n{err}", out.status);
    assert_eq!(
        err,
        format!("exhausted-test: memory exhausted ({ASKED} bytes asked for)\n")
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("allocated"));
}
