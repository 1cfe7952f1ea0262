//! `--json`: one JSON object a line (NDJSON) per result, for `jq`, DuckDB's
//! `read_json` and scripts.
//!
//! The fields are those of fd's `--json` pull requests (fd #1800, #1866):
//! `path` as `{"text": …}`, `type`, `mode` (octal permission bits as a
//! string), `size_bytes`, and `modified`/`accessed` as RFC 3339 UTC times;
//! beyond them, what `-l` shows: `perms` (`ls -l`'s mode string), `inode`,
//! `nlink`, `uid`, `gid`, `user`, `group` (names as `ls -l` prints them,
//! the number where no name resolves), `changed` (ctime; fd's `created`,
//! a birth time, is not known here) and a symlink's `target`.
//!
//! A path (or link target) that is not UTF-8 keeps its text, lossy (each
//! invalid byte U+FFFD), and gains `bytes`: the exact bytes in base64.
//! `has("bytes")` tells the two apart; fd's pull requests give `bytes`
//! instead of `text`, which leaves a reader that wants text with nothing.
//!
//! Each record is written field by field into the thread's output buffer,
//! as a plain line is: no allocation per result, no serializer. On a
//! terminal, DEL and the C1 controls in names are `\u` escapes too, as
//! control characters are in every listing there.

use std::io::Write as _;

use fnd_output::json::{push_base64, push_string, push_string_for_terminal};
use fnd_walk::{FileType, Metadata};

use crate::format::{metadata, push_group_name, push_link_target, push_perms, push_user_name};
use crate::found::Found;

/// A thread's reused buffer for one record's parts, and how strings are
/// written.
#[derive(Default)]
pub struct JsonScratch {
    text: Vec<u8>,
    /// Output is a terminal.
    terminal: bool,
}

impl JsonScratch {
    pub fn new(terminal: bool) -> JsonScratch {
        JsonScratch {
            text: Vec::new(),
            terminal,
        }
    }
}

/// A JSON string, made safe for a terminal when output is one.
fn push_text(terminal: bool, out: &mut Vec<u8>, s: &str) {
    if terminal {
        push_string_for_terminal(out, s);
    } else {
        push_string(out, s);
    }
}

/// Append the record of `entry`, whose path as printed is `path`, and its
/// newline.
pub fn push_record(entry: &impl Found, path: &[u8], scratch: &mut JsonScratch, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"path\":");
    push_path(scratch.terminal, out, path);
    out.extend_from_slice(b",\"type\":\"");
    out.extend_from_slice(type_name(entry.target_type()).as_bytes());
    out.push(b'"');
    if entry.target_type() == FileType::Symlink {
        scratch.text.clear();
        push_link_target(entry, &mut scratch.text);
        if !scratch.text.is_empty() {
            out.extend_from_slice(b",\"target\":");
            push_path(scratch.terminal, out, &scratch.text);
        }
    }
    // A result that vanished or cannot be stat'ed keeps its path and type.
    if let Some(m) = metadata(entry) {
        push_metadata(&m, scratch, out);
    }
    out.extend_from_slice(b"}\n");
}

/// fd's names for its three types; the others by what they are.
fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::File => "file",
        FileType::Dir => "directory",
        FileType::Symlink => "symlink",
        FileType::BlockDevice => "block_device",
        FileType::CharDevice => "char_device",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::Unknown => "unknown",
    }
}

/// `{"text": …}`, with `"bytes"` beside a lossy text.
fn push_path(terminal: bool, out: &mut Vec<u8>, path: &[u8]) {
    out.extend_from_slice(b"{\"text\":");
    match std::str::from_utf8(path) {
        Ok(text) => push_text(terminal, out, text),
        Err(_) => {
            push_text(terminal, out, &String::from_utf8_lossy(path));
            out.extend_from_slice(b",\"bytes\":\"");
            push_base64(out, path);
            out.push(b'"');
        }
    }
    out.push(b'}');
}

fn push_metadata(m: &Metadata, scratch: &mut JsonScratch, out: &mut Vec<u8>) {
    let _ = write!(out, ",\"mode\":\"{:o}\",\"perms\":\"", m.permissions());
    push_perms(out, m.mode);
    let _ = write!(
        out,
        "\",\"size_bytes\":{},\"inode\":{},\"nlink\":{},\"uid\":{},\"gid\":{},\"user\":",
        m.size, m.ino, m.nlink, m.uid, m.gid
    );
    scratch.text.clear();
    push_user_name(&mut scratch.text, m.uid);
    push_text(scratch.terminal, out, &String::from_utf8_lossy(&scratch.text));
    out.extend_from_slice(b",\"group\":");
    scratch.text.clear();
    push_group_name(&mut scratch.text, m.gid);
    push_text(scratch.terminal, out, &String::from_utf8_lossy(&scratch.text));
    for (key, secs, nsec) in [
        ("modified", m.mtime, m.mtime_nsec),
        ("accessed", m.atime, m.atime_nsec),
        ("changed", m.ctime, m.ctime_nsec),
    ] {
        let _ = write!(out, ",\"{key}\":\"");
        push_utc_time(out, secs, nsec);
        out.push(b'"');
    }
}

/// RFC 3339 in UTC, as fd's pull requests print a time (jiff's format):
/// `2025-07-31T13:01:22.259802329Z`, the fraction without trailing zeros
/// and left out when zero. Computed here: a formatter per field would cost
/// more than the rest of the record.
fn push_utc_time(out: &mut Vec<u8>, secs: i64, nsec: u32) {
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    );
    if nsec > 0 && nsec < 1_000_000_000 {
        let mut digits = [0u8; 9];
        let mut n = nsec;
        for slot in digits.iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        let len = 9 - digits.iter().rev().take_while(|&&c| c == b'0').count();
        out.push(b'.');
        out.extend_from_slice(&digits[..len]);
    }
    out.push(b'Z');
}

/// Year, month, day of a day counted from 1970-01-01 (proleptic Gregorian;
/// Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(secs: i64, nsec: u32) -> String {
        let mut out = Vec::new();
        push_utc_time(&mut out, secs, nsec);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn times_as_jiff_prints_them() {
        for (secs, nsec) in [
            (0, 0),
            (1_753_966_882, 259_802_329),
            (1_753_966_882, 500_000_000),
            (951_782_400, 1),
            (-1, 999_999_999),
            (-62_135_596_800, 0),
            (253_402_200_000, 0),
            (4_107_542_400, 120),
        ] {
            let ts = jiff::Timestamp::new(secs, nsec as i32).unwrap();
            assert_eq!(time(secs, nsec), ts.to_string(), "{secs} {nsec}");
        }
    }

    #[test]
    fn paths_that_are_not_utf8_keep_their_bytes() {
        let mut out = Vec::new();
        push_path(false, &mut out, b"d/bad\xff\"x");
        let expected = "{\"text\":\"d/bad\u{fffd}\\\"x\",\"bytes\":\"ZC9iYWT/Ing=\"}";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        let mut out = Vec::new();
        push_path(false, &mut out, "caf\u{e9}/a\nb".as_bytes());
        assert_eq!(String::from_utf8(out).unwrap(), "{\"text\":\"caf\u{e9}/a\\nb\"}");
    }
}
