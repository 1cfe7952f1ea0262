//! What fdu says on stderr, worded as coreutils words it: `fdu: MESSAGE`,
//! I/O errors without Rust's "(os error N)", names quoted as du quotes them.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Mutex, OnceLock};

/// The name fdu was started by, as du names itself in its messages: its
/// `argv[0]` as given (`du` through a link of that name found on `PATH`,
/// `/usr/bin/du` when started by that path), as coreutils' `program_name`.
pub fn program_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::args_os()
            .next()
            .map(|arg0| String::from_utf8_lossy(arg0.as_bytes()).into_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "fdu".to_string())
    })
}

/// Messages kept rather than printed, while the terminal shows a full screen.
static HELD: Mutex<Option<Vec<String>>> = Mutex::new(None);

/// Print `fdu: MESSAGE` on stderr (a stderr that cannot be written is no
/// reason to panic), in one write: the ranks of an MPI job share one
/// stderr, and a line written in pieces could be cut by another's. Kept
/// instead while messages are held.
pub fn report(message: &str) {
    let line = format!("{}: {message}\n", program_name());
    if let Some(held) = HELD.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        held.push(line);
        return;
    }
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// From now on, keep messages (a full-screen view owns the terminal).
pub fn hold() {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Vec::new);
}

/// How many messages are held.
pub fn held_count() -> usize {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map_or(0, Vec::len)
}

/// Stop holding messages and hand over those held (each ends in a newline).
pub fn release() -> Vec<String> {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default()
}

/// du's hint after a usage error.
pub fn usage_hint() {
    let _ = writeln!(
        std::io::stderr().lock(),
        "Try '{} --help' for more information.",
        program_name()
    );
}

/// An I/O error as coreutils words it ("No such file or directory"), without Rust's "(os error 2)".
pub fn error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A value quoted as coreutils' `quote` does in messages: ‘x’ in a UTF-8
/// locale, 'x' otherwise.
pub fn quote_value(value: &str) -> String {
    let var = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_default();
    let lower = var.to_ascii_lowercase();
    if lower.contains("utf-8") || lower.contains("utf8") {
        format!("\u{2018}{value}\u{2019}")
    } else {
        format!("'{value}'")
    }
}

/// A name quoted the way coreutils quotes file names in diagnostics
/// (`quoteaf`): always in single quotes, `'` as `'\''`, control bytes and
/// invalid UTF-8 as `$'\ooo'` pieces.
pub fn quote(name: &[u8]) -> String {
    let mut s = String::from("'");
    // A character du cannot show inside single quotes closes them, goes in
    // as `$'\ooo'`, and reopens them: `'a'$'\n''b'`.
    let escape = |s: &mut String, esc: &str| {
        s.push_str("'$'");
        s.push_str(esc);
        s.push_str("''");
    };
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => s.push_str("'\\''"),
                '\n' => escape(&mut s, "\\n"),
                '\t' => escape(&mut s, "\\t"),
                c if c.is_control() => escape(&mut s, &format!("\\{:03o}", c as u32)),
                c => s.push(c),
            }
        }
        for &b in chunk.invalid() {
            escape(&mut s, &format!("\\{b:03o}"));
        }
    }
    s.push('\'');
    // A name ending in an escape leaves an empty `''` behind; du drops it.
    if s.len() > 3 && s.ends_with("'''") {
        s.truncate(s.len() - 2);
    }
    s
}

/// A file name as coreutils' `quotef` shows it at the head of a message
/// (`list:3: ...`): bare when the shell would take it as it is, else
/// quoted as [`quote`] quotes.
pub fn quotef(name: &[u8]) -> String {
    let plain = !name.is_empty()
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"%+,-./:=@_^".contains(&b));
    if plain {
        String::from_utf8_lossy(name).into_owned()
    } else {
        quote(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_coreutils() {
        assert_eq!(quote(b"abc"), "'abc'");
        assert_eq!(quote(b"it's"), "'it'\\''s'");
        assert_eq!(quote(b"a\nb"), "'a'$'\\n''b'");
        assert_eq!(quote(b"bad\xff"), "'bad'$'\\377'");
        assert_eq!(quotef(b"dir/list-1.txt"), "dir/list-1.txt");
        assert_eq!(quotef(b"my list"), "'my list'");
    }
}
