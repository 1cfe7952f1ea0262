//! Colours (`LS_COLORS`, fd's default palette, `NO_COLOR`), hyperlinks,
//! NUL separators, and escaping of control characters on a terminal.

mod output_tree;

use std::path::Path;
use std::process::Command;

use output_tree::{fnd, sorted_lines, tree};

const LS_COLORS: &str = "di=01;34:ln=01;36:*.gz=01;31:ex=01;32:or=40;31;01";

#[test]
fn ls_colors_paint_parent_name_and_slash() {
    let t = tree();
    let out = fnd(t.path())
        .args(["-c", "always"])
        .env("LS_COLORS", LS_COLORS)
        .output()
        .unwrap();
    let dir = |s: &str| format!("\x1b[1;34m{s}\x1b[0m");
    let mut expected = [
        format!("{}{}", dir("a/"), dir("b.d") + &dir("/")),
        format!("{}y", dir("a/b.d/")),
        format!("{}\x1b[1;31mx.tar.gz\x1b[0m", dir("a/")),
        dir("a") + &dir("/"),
        "\x1b[1;32mexe\x1b[0m".to_owned(),
        "\x1b[1;36mlink\x1b[0m".to_owned(),
        "\x1b[1;40;31mdangling\x1b[0m".to_owned(),
    ];
    expected.sort();
    assert_eq!(sorted_lines(&out.stdout), expected);
}

#[test]
fn default_palette_is_fds_and_no_color_only_affects_auto() {
    let t = tree();
    let out = fnd(t.path())
        .args(["-c", "always", "-t", "d", "--max-depth", "1"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"\x1b[38;5;81ma\x1b[0m\x1b[38;5;81m/\x1b[0m\n");
    // Piped, `auto` never colours.
    let out = fnd(t.path())
        .args(["-t", "d", "--max-depth", "1"])
        .env("LS_COLORS", LS_COLORS)
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"a/\n");
}

#[test]
fn hyperlinks_wrap_each_path() {
    let t = tree();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let root = t.path().canonicalize().unwrap();
    let out = fnd(root.as_path())
        .args(["--hyperlink=always", "-e", "gz"])
        .output()
        .unwrap();
    let expected = format!(
        "\x1b]8;;file://{}{}/a/x.tar.gz\x1b\\a/x.tar.gz\x1b]8;;\x1b\\\n",
        host.trim(),
        root.display()
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn print0_ends_records_with_nul() {
    let t = tree();
    let out = fnd(t.path()).args(["-0", "-e", "gz"]).output().unwrap();
    assert_eq!(out.stdout, b"./a/x.tar.gz\0");
    let out = fnd(t.path())
        .args(["-0", "--format", "{/}", "-e", "gz"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"x.tar.gz\0");
}

/// Run fnd under `script`, so its stdout is a terminal; None without `script`.
fn on_terminal(dir: &Path, args: &str, env: &[(&str, &str)]) -> Option<Vec<u8>> {
    let bin = assert_cmd::cargo::cargo_bin("fnd");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("'{}' {args}", bin.display()), "/dev/null"])
        .current_dir(dir)
        .env_remove("LS_COLORS")
        .env_remove("NO_COLOR")
        .env("HOME", dir);
    cmd.envs(env.iter().copied());
    match cmd.output() {
        Ok(out) if out.status.success() => Some(out.stdout),
        _ => {
            eprintln!("skipped: `script` (bsdutils) is not available to give fnd a terminal");
            None
        }
    }
}

#[test]
fn control_characters_are_escaped_on_a_terminal_only() {
    let t = tree();
    std::fs::write(t.path().join("bad\x1b[31mname\x07"), b"").unwrap();
    let piped = fnd(t.path()).arg("^bad").output().unwrap();
    assert_eq!(piped.stdout, b"bad\x1b[31mname\x07\n");
    let Some(tty) = on_terminal(t.path(), "^bad", &[("NO_COLOR", "1")]) else {
        return;
    };
    assert_eq!(String::from_utf8_lossy(&tty), "bad\\x1B[31mname\\x07\r\n");
    let Some(tty) = on_terminal(t.path(), "--format '<{}>' ^bad", &[]) else {
        return;
    };
    assert_eq!(String::from_utf8_lossy(&tty), "<bad\\x1B[31mname\\x07>\r\n");
    let Some(tty) = on_terminal(t.path(), "^bad", &[("LS_COLORS", "fi=01")]) else {
        return;
    };
    assert_eq!(String::from_utf8_lossy(&tty), "\x1b[1mbad\\x1B[31mname\\x07\x1b[0m\r\n");
}

/// `--json` on a terminal: no raw control byte reaches it, DEL and the C1
/// controls included, and the line is still the same JSON.
#[test]
fn json_on_a_terminal_escapes_every_control() {
    let t = tree();
    std::fs::write(t.path().join("bad\x7f\u{9b}31m\x1b[0m"), b"").unwrap();
    let piped = fnd(t.path()).args(["--json", "^bad"]).output().unwrap();
    let Some(tty) = on_terminal(t.path(), "--json ^bad", &[]) else {
        return;
    };
    let line = tty.strip_suffix(b"\r\n").unwrap();
    assert!(!line.iter().any(|&b| b < 0x20 || b == 0x7f), "{line:?}");
    assert!(
        !line.windows(2).any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1])),
        "{line:?}"
    );
    assert!(String::from_utf8_lossy(line).contains(r#""text":"bad\u007f\u009b31m\u001b[0m""#));
    let parsed =
        |l: &[u8]| -> serde_json::Value { serde_json::from_slice::<serde_json::Value>(l).unwrap()["path"].clone() };
    assert_eq!(parsed(line), parsed(piped.stdout.strip_suffix(b"\n").unwrap()));
}
