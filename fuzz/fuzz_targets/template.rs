//! `--format`/`--exec` templates: any bytes parse, and rendering any path
//! never panics. Run with `cargo +nightly fuzz run template`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fnd::format::Template;

fuzz_target!(|input: (&[u8], &[u8], &[u8], Option<&[u8]>)| {
    let (template, prefix, name, separator) = input;
    let t = Template::parse_bytes(template);
    let mut out = Vec::new();
    t.render_parts(prefix, name, separator, &mut out);
    // Text without braces renders as itself.
    if !template.contains(&b'{') && !template.contains(&b'}') {
        assert_eq!(out, template);
    }
    // `{}` is the path, byte for byte, when no separator is substituted.
    out.clear();
    Template::parse_bytes(b"{}").render_parts(prefix, name, None, &mut out);
    assert_eq!(out, [prefix, name].concat());
});
