//! `-x`, `-X`, `-l`: commands get their arguments verbatim (no shell), and
//! exit codes and messages are fd's.

mod output_tree;

use output_tree::{fnd, sorted_lines, tree};

#[test]
fn exec_passes_arguments_verbatim() {
    let t = tree();
    let tricky = ["with space", "quote's \"here\"", "$(touch pwned)", "`id`", "*", ";x"];
    let mut args = vec!["-e", "gz", "-x", "printf", "[%s]"];
    args.extend(tricky);
    args.push("{/.}");
    let out = fnd(t.path()).args(&args).output().unwrap();
    assert!(out.status.success());
    let expected: String = tricky.iter().map(|a| format!("[{a}]")).collect::<String>() + "[x.tar]";
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    assert!(!t.path().join("pwned").exists());
}

#[test]
fn exec_appends_the_path_and_keeps_dot_slash() {
    let t = tree();
    let out = fnd(t.path()).args(["-t", "f", "-x", "echo", "got"]).output().unwrap();
    assert_eq!(
        sorted_lines(&out.stdout),
        ["got ./a/b.d/y", "got ./a/x.tar.gz", "got ./exe"]
    );
    // Several commands per result, separated by `;`, run in order.
    let out = fnd(t.path())
        .args(["^y$", "-x", "echo", "{}", ";", "-x", "echo", "{//}"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "./a/b.d/y\n./a/b.d\n");
}

#[test]
fn each_commands_output_stays_together() {
    let t = tree();
    let script = "printf 1; sleep 0.05; printf '2\\n'; printf e >&2; printf 'r\\n' >&2";
    let out = fnd(t.path())
        .args(["-j4", "-t", "f", "-x", "sh", "-c", script])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "12\n".repeat(3));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "er\n".repeat(3));
}

#[test]
fn exec_batch_and_batch_size() {
    let t = tree();
    let out = fnd(t.path()).args(["-t", "f", "-X", "echo", "n"]).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    let mut words: Vec<&str> = line.split_whitespace().collect();
    words.sort();
    assert_eq!(words, ["./a/b.d/y", "./a/x.tar.gz", "./exe", "n"]);
    let out = fnd(t.path())
        .args(["-t", "f", "--batch-size", "2", "-X", "echo"])
        .output()
        .unwrap();
    let lines = sorted_lines(&out.stdout);
    assert_eq!(lines.len(), 2, "{lines:?}");
    // No result, no command.
    let out = fnd(t.path())
        .args(["nothing-matches", "-X", "echo", "ran"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn missing_and_failing_commands_exit_1() {
    let t = tree();
    let out = fnd(t.path())
        .args(["^exe$", "-x", "fnd-no-such-command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "[fnd error]: Command not found: fnd-no-such-command\n"
    );
    let out = fnd(t.path()).args(["-X", "fnd-no-such-command"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "[fnd error]: Command not found: fnd-no-such-command\n"
    );
    for flag in ["-x", "-X"] {
        let out = fnd(t.path()).args([flag, "false"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{flag} false");
    }
    let out = fnd(t.path())
        .args(["-t", "f", "-x", "sh", "-c", "echo out; echo err >&2; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(sorted_lines(&out.stdout), ["out", "out", "out"]);
}

#[test]
fn bad_command_templates_are_usage_errors() {
    let t = tree();
    for (args, msg) in [
        (
            &["-X", "echo", "{}", "{/}"][..],
            "Only one placeholder allowed for batch commands",
        ),
        (
            &["-X", "{}"][..],
            "First argument of --exec-batch must be a fixed executable, not a placeholder",
        ),
    ] {
        let out = fnd(t.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with(&format!("error: {msg}\n")),
            "{args:?}"
        );
    }
    let out = fnd(t.path()).args(["-l", "-x", "echo"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn list_details_runs_ls() {
    let t = tree();
    let out = fnd(t.path()).args(["-l", "-e", "gz"]).output().unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.starts_with("-rw-r--r-- 1 ") && line.ends_with(" ./a/x.tar.gz\n"),
        "{line:?}"
    );
}

#[test]
fn completions_and_man_page() {
    let t = tree();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = fnd(t.path()).args(["--gen-completions", shell]).output().unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("exec-batch"),
            "{shell}"
        );
    }
    let out = fnd(t.path()).arg("--gen-man").output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with(".ie"));
}

/// Thousands of results, many to a message between the walk and the
/// runners: each reaches its command exactly once, `-X` batches keep to
/// `--batch-size`, run one at a time, and a failing batch makes the exit 1
/// without stopping the others.
#[test]
fn many_results_each_once_and_batches_one_at_a_time() {
    let t = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for d in 0..30 {
        std::fs::create_dir(t.path().join(format!("d{d}"))).unwrap();
        for f in 0..100 {
            let name = format!("d{d}/f{f}");
            std::fs::write(t.path().join(&name), b"").unwrap();
            expected.push(format!("./{name}"));
        }
    }
    expected.sort();
    // Each batch takes a lock (mkdir fails if another holds it), prints
    // its arguments, then its size.
    let lock = tempfile::tempdir().unwrap();
    let lock = lock.path().join("lock");
    let lock = lock.to_str().unwrap();
    let script =
        format!("mkdir {lock} || echo OVERLAP; sleep 0.01; printf '%s\\n' \"$@\"; echo \"== $#\"; rmdir {lock}");
    for threads in ["-j1", "-j2", "-j4"] {
        let out = fnd(t.path())
            .args([
                threads,
                "-t",
                "f",
                "--batch-size",
                "700",
                "-X",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains("OVERLAP"));
        let sizes: Vec<usize> = text
            .lines()
            .filter_map(|l| l.strip_prefix("== "))
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(sizes.iter().all(|&n| n <= 700) && sizes.len() >= 5, "{sizes:?}");
        let mut got: Vec<&str> = text.lines().filter(|l| l.starts_with("./")).collect();
        got.sort();
        assert_eq!(got, expected, "{threads}");
    }
    let out = fnd(t.path()).args(["-j3", "-t", "f", "-x", "echo"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(sorted_lines(&out.stdout), expected, "-x");
    // One batch fails (the one holding d7/f7), the rest still run: exit 1.
    let script = "for a; do [ \"$a\" = ./d7/f7 ] && exit 3; done; printf '%s\\n' \"$@\"";
    let out = fnd(t.path())
        .args(["-t", "f", "--batch-size", "100", "-X", "sh", "-c", script, "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(sorted_lines(&out.stdout).len(), expected.len() - 100);
}

/// A command that cannot start for want of descriptors waits for the
/// walk's to close, as fd's commands under `ulimit -n 10` do not: 48
/// directories, each given to `echo` with its output captured (two pipes
/// and the spawn's own), every one reported and none refused.
#[test]
fn commands_wait_for_descriptors_under_a_low_limit() {
    let t = tempfile::tempdir().unwrap();
    for top in 0..8 {
        for sub in 0..5 {
            let d = t.path().join(format!("t{top}/s{sub}"));
            std::fs::create_dir_all(&d).unwrap();
            for f in 0..20 {
                std::fs::write(d.join(format!("f{f}")), "").unwrap();
            }
        }
    }
    for (flag, n) in [("-x", "10"), ("-x", "12"), ("-X", "10")] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
            .arg(assert_cmd::cargo::cargo_bin("fnd"))
            .args(["-u", "-t", "d", ".", ".", flag, "echo"])
            .current_dir(t.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flag} at {n}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).split_whitespace().count(),
            48,
            "{flag} at {n}: {stderr}"
        );
    }
}
