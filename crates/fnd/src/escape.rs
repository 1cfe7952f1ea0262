//! Names bound for a terminal: a file name may hold escape sequences or
//! control characters that would rewrite the screen, so on a terminal they
//! are shown escaped (`\x1B`, `\u{202E}`), as fd shows them. Output to a
//! pipe or file is never escaped: it gets the bytes as they are.

use std::io::Write as _;

/// Characters shown escaped: controls (C0, DEL, C1) except tab, and the
/// invisible or reordering ones (bidi overrides, zero-width, tags).
fn needs_escape(c: char) -> bool {
    if c == '\t' {
        return false;
    }
    c.is_control()
        || matches!(c,
            '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}')
}

/// Append `bytes` for display on a terminal: escaped where needed, and
/// bytes that are not UTF-8 shown as U+FFFD (as fd does on a terminal).
pub fn push_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    // Almost every name is printable ASCII: copy it as it is.
    if bytes.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        out.extend_from_slice(bytes);
        return;
    }
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if needs_escape(c) {
                let v = c as u32;
                if v <= 0xff {
                    let _ = write!(out, "\\x{v:02X}");
                } else {
                    let _ = write!(out, "\\u{{{v:04X}}}");
                }
            } else {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        if !chunk.invalid().is_empty() {
            out.extend_from_slice("\u{FFFD}".as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &[u8]) -> String {
        let mut out = Vec::new();
        push_escaped(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_what_fd_escapes() {
        assert_eq!(esc(b"plain name.txt"), "plain name.txt");
        assert_eq!(esc(b"a\tb"), "a\tb");
        assert_eq!(esc("résumé".as_bytes()), "résumé");
        assert_eq!(
            esc(b"innocent\x1b]52;c;cHd=\x1b\\.txt"),
            "innocent\\x1B]52;c;cHd=\\x1B\\.txt"
        );
        assert_eq!(esc(b"A\rFAKE"), "A\\x0DFAKE");
        assert_eq!(esc(b"a\nb\x7f\x07"), "a\\x0Ab\\x7F\\x07");
        assert_eq!(esc("\u{9b}31m".as_bytes()), "\\x9B31m");
        assert_eq!(esc("safe\u{202E}fil".as_bytes()), "safe\\u{202E}fil");
        assert_eq!(esc("\u{FEFF}n".as_bytes()), "\\u{FEFF}n");
    }

    #[test]
    fn invalid_utf8_shows_as_replacement() {
        assert_eq!(esc(b"a\xffb"), "a\u{FFFD}b");
    }
}
