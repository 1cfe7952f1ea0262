//! JSON text for records written by hand: a string's escapes and base64,
//! appended to a record's buffer without allocating. Writing a record
//! field by field into the thread's buffer is what keeps NDJSON output as
//! cheap as plain lines; these are the two pieces that need care.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `s` as a JSON string, quotes included, escaped as serde_json
/// escapes: `"`, `\`, and control characters (`\n`, `\t`, … or `\u00XX`).
pub fn push_string(out: &mut Vec<u8>, s: &str) {
    push_string_escaping(out, s.as_bytes(), false);
}

/// [`push_string`] for bytes that need not be UTF-8, escaped the same way;
/// other bytes are written as they are (as ncdu writes names to its
/// exports: a reader that wants JSON's UTF-8 must take them as bytes).
pub fn push_bytes_as_string(out: &mut Vec<u8>, bytes: &[u8]) {
    push_string_escaping(out, bytes, false);
}

/// [`push_string`] for a terminal: DEL and the C1 controls (U+0080 to
/// U+009F; a terminal may read U+009B as the start of an escape sequence)
/// are written as `\u` escapes too. The text is the same JSON string.
pub fn push_string_for_terminal(out: &mut Vec<u8>, s: &str) {
    push_string_escaping(out, s.as_bytes(), true);
}

fn push_string_escaping(out: &mut Vec<u8>, bytes: &[u8], terminal: bool) {
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if i < start {
            // The second byte of a C1 control, already written.
            continue;
        }
        if terminal && (b == 0x7f || (b == 0xc2 && matches!(bytes.get(i + 1), Some(0x80..=0x9f)))) {
            // DEL, or the first byte of a C1 control, whose code point is
            // the second byte's value.
            let c = if b == 0x7f { b } else { bytes[i + 1] };
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
            start = if b == 0x7f { i + 1 } else { i + 2 };
            continue;
        }
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\t' => b't',
            b'\r' => b'r',
            0x08 => b'b',
            0x0c => b'f',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            out.extend_from_slice(&[b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Append `bytes` in standard base64 (RFC 4648, padded), without quotes.
pub fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32;
        out.extend_from_slice(&[
            ALPHABET[(n >> 18) as usize & 63],
            ALPHABET[(n >> 12) as usize & 63],
            ALPHABET[(n >> 6) as usize & 63],
            ALPHABET[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = (a as u32) << 16;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                b'=',
                b'=',
            ]);
        }
        [a, b] => {
            let n = (a as u32) << 16 | (b as u32) << 8;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                ALPHABET[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_as_serde_json_writes_them() {
        let nasty: String = (0u8..0x80)
            .map(char::from)
            .chain("é\u{fffd}\u{2028}😀".chars())
            .collect();
        let mut out = Vec::new();
        push_string(&mut out, &nasty);
        assert_eq!(out, serde_json::to_vec(&nasty).unwrap());
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, nasty);
    }

    #[test]
    fn bytes_escape_as_strings_do_and_keep_the_rest() {
        let mut out = Vec::new();
        push_bytes_as_string(&mut out, b"a\"\\\n\x01\xff\xc3\xa9");
        assert_eq!(out, b"\"a\\\"\\\\\\n\\u0001\xff\xc3\xa9\"");
    }

    #[test]
    fn terminal_strings_escape_del_and_c1_controls() {
        let s = "a\u{7f}b\u{9b}[31mc\u{80}\u{9f}\u{a0}é";
        let mut out = Vec::new();
        push_string_for_terminal(&mut out, s);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "\"a\\u007fb\\u009b[31mc\\u0080\\u009f\u{a0}é\""
        );
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn base64_of_every_remainder() {
        let cases: [(&[u8], &str); 6] = [
            (b"", ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\xfe\x00/", "//4ALw=="),
        ];
        for (bytes, expected) in cases {
            let mut out = Vec::new();
            push_base64(&mut out, bytes);
            assert_eq!(out, expected.as_bytes(), "{bytes:?}");
        }
    }
}
