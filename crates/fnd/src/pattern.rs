//! What the name (or, with `-p`, the absolute path) must look like: the
//! pattern and `--and` patterns as regular expressions over bytes (globs and
//! literals are turned into regexes, as fd does), and `-e` extensions.

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_syntax::hir::{Class, Hir, HirKind, Literal, Look};

use crate::cli::Cli;

/// How pattern text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Regex,
    Glob,
    Fixed,
    Exact,
}

impl Syntax {
    pub fn from_cli(cli: &Cli) -> Self {
        if cli.glob {
            Syntax::Glob
        } else if cli.exact {
            Syntax::Exact
        } else if cli.fixed_strings {
            Syntax::Fixed
        } else {
            Syntax::Regex
        }
    }
}

/// Everything the name or path must match.
#[derive(Clone, Debug)]
pub struct NameMatcher {
    /// All must match; empty patterns (which match everything) are left out.
    patterns: Vec<Regex>,
    extensions: Option<RegexSet>,
    /// With `-p`: the working directory, prepended to relative paths.
    pub full_path_base: Option<Vec<u8>>,
}

/// A pattern with a `/` can never match a file name.
pub fn check_not_a_path(pattern: &str) -> Result<(), String> {
    if pattern.contains('/') {
        return Err(format!(
            "The search pattern '{pattern}' contains a path-separation character and will not lead to any search results.\n\n\
             If you want to search for all files inside the '{pattern}' directory, use a match-all pattern:\n\n  \
             fnd . '{pattern}'\n\n\
             Instead, if you want your pattern to match the full file path, use:\n\n  \
             fnd --full-path '{pattern}'"
        ));
    }
    Ok(())
}

/// The regex source for one pattern.
pub fn to_regex(pattern: &str, syntax: Syntax) -> Result<String, String> {
    Ok(match syntax {
        Syntax::Glob if !pattern.is_empty() => {
            let glob = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| e.to_string())?;
            glob.regex().to_owned()
        }
        Syntax::Exact => format!("^{}$", regex::escape(pattern)),
        Syntax::Fixed => regex::escape(pattern),
        Syntax::Regex | Syntax::Glob => pattern.to_owned(),
    })
}

fn parse(pattern: &str) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()
}

/// Smart case: does the pattern spell an uppercase letter (not `\A`, not `\x4F`)?
pub fn has_uppercase(pattern: &str) -> bool {
    fn walk(hir: &Hir) -> bool {
        match hir.kind() {
            HirKind::Literal(Literal(bytes)) => match std::str::from_utf8(bytes) {
                Ok(s) => s.chars().any(char::is_uppercase),
                Err(_) => bytes.iter().any(|b| char::from(*b).is_uppercase()),
            },
            HirKind::Class(Class::Unicode(ranges)) => ranges
                .iter()
                .any(|r| r.start().is_uppercase() || r.end().is_uppercase()),
            HirKind::Class(Class::Bytes(ranges)) => ranges.iter().any(|r| {
                char::from(r.start()).is_uppercase() || char::from(r.end()).is_uppercase()
            }),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Concat(hirs) | HirKind::Alternation(hirs) => hirs.iter().any(walk),
            _ => false,
        }
    }
    parse(pattern).is_some_and(|h| walk(&h))
}

/// Does the pattern only match names with a leading dot (`^\.foo`)? Those
/// are hidden, so without `-H` the search cannot find anything.
pub fn only_matches_hidden(pattern: &str) -> bool {
    let Some(hir) = parse(pattern) else {
        return false;
    };
    let HirKind::Concat(hirs) = hir.kind() else {
        return false;
    };
    matches!(
        hirs.first().map(Hir::kind),
        Some(HirKind::Look(Look::Start))
    ) && matches!(hirs.get(1).map(Hir::kind), Some(HirKind::Literal(Literal(b))) if b.starts_with(b"."))
}

impl NameMatcher {
    /// Compile the patterns (regex sources) and extensions.
    pub fn new(
        sources: &[String],
        case_sensitive: bool,
        extensions: &[String],
        full_path_base: Option<Vec<u8>>,
    ) -> Result<Self, String> {
        let patterns = sources
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                RegexBuilder::new(s).case_insensitive(!case_sensitive).dot_matches_new_line(true).build().map_err(|e| {
                    format!(
                        "{e}\n\nNote: You can search for literal substrings with '--fixed-strings' or literal strings \
                         with '--exact' options (instead of a regular expression). Alternatively, you can also use \
                         the '--glob' option to match on a glob pattern."
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let extensions = if extensions.is_empty() {
            None
        } else {
            let sources = extensions
                .iter()
                .map(|e| format!(r".\.{}$", regex::escape(e.trim_start_matches('.'))));
            Some(
                RegexSetBuilder::new(sources)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| e.to_string())?,
            )
        };
        Ok(NameMatcher {
            patterns,
            extensions,
            full_path_base,
        })
    }

    /// True when every name matches (no pattern, no extension).
    pub fn matches_all(&self) -> bool {
        self.patterns.is_empty() && self.extensions.is_none()
    }

    /// Match an entry given its parent's path prefix and its name; `scratch`
    /// holds the absolute path for `-p`.
    pub fn matches(&self, prefix: &[u8], name: &[u8], scratch: &mut Vec<u8>) -> bool {
        if !self.patterns.is_empty() {
            let subject: &[u8] = match &self.full_path_base {
                Some(cwd) => {
                    absolute_into(scratch, cwd, prefix, name);
                    scratch
                }
                None => name,
            };
            if !self.patterns.iter().all(|p| matches_one(p, subject)) {
                return false;
            }
        }
        self.extensions
            .as_ref()
            .is_none_or(|set| set.is_match(name))
    }
}

/// `.` (the pattern of `fnd -u .`) matches any name holding one whole
/// character, so a name with an ASCII byte is settled without the regex;
/// skipping it saved ~3% of a parallel listing, where threads also contend
/// for the regex's shared cache. Names of only non-ASCII bytes still go to
/// the regex, which decides for invalid UTF-8 as before.
fn matches_one(regex: &Regex, subject: &[u8]) -> bool {
    (regex.as_str() == "." && subject.iter().any(u8::is_ascii)) || regex.is_match(subject)
}

/// `cwd/path` for a relative path (without its leading `./`), the path itself when absolute.
fn absolute_into(out: &mut Vec<u8>, cwd: &[u8], prefix: &[u8], name: &[u8]) {
    out.clear();
    if prefix.starts_with(b"/") {
        out.extend_from_slice(prefix);
    } else {
        out.extend_from_slice(cwd);
        let mut rel = prefix;
        while let Some(rest) = rel.strip_prefix(b"./") {
            let slashes = rest.iter().take_while(|&&b| b == b'/').count();
            rel = &rest[slashes..];
        }
        if !out.ends_with(b"/") {
            out.push(b'/');
        }
        out.extend_from_slice(rel);
    }
    out.extend_from_slice(name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_case() {
        assert!(has_uppercase("foo.EXE"));
        assert!(has_uppercase("foo.[a-zA-Z]"));
        assert!(!has_uppercase(r"\Acargo"));
        assert!(!has_uppercase(r"carg\x6F"));
    }

    #[test]
    fn any_character_shortcut_agrees_with_the_regex() {
        let m = NameMatcher::new(&[".".to_string()], true, &[], None).unwrap();
        let any = Regex::new("(?s).").unwrap();
        let mut scratch = Vec::new();
        for name in [&b"a"[..], b"\n", "\u{e9}".as_bytes(), b"\xff\xfe", b"\xffa"] {
            assert_eq!(m.matches(b"", name, &mut scratch), any.is_match(name), "{name:?}");
        }
    }

    #[test]
    fn leading_dot() {
        assert!(only_matches_hidden(r"^\.gitignore"));
        assert!(!only_matches_hidden("^.gitignore"));
        assert!(!only_matches_hidden(r"\.gitignore"));
    }

    #[test]
    fn globs_do_not_cross_slashes() {
        let re = Regex::new(&to_regex("*.rs", Syntax::Glob).unwrap()).unwrap();
        assert!(re.is_match(b"main.rs"));
        assert!(!re.is_match(b"src/main.rs"));
    }

    #[test]
    fn full_path_is_absolute() {
        let mut out = Vec::new();
        absolute_into(&mut out, b"/home/u", b"./a/", b"b");
        assert_eq!(out, b"/home/u/a/b");
        absolute_into(&mut out, b"/home/u", b"/x/", b"b");
        assert_eq!(out, b"/x/b");
        absolute_into(&mut out, b"/", b"a/", b"b");
        assert_eq!(out, b"/a/b");
    }

    #[test]
    fn extensions_need_a_stem() {
        let m = NameMatcher::new(&[], false, &["txt".into(), ".tar.gz".into()], None).unwrap();
        let mut s = Vec::new();
        assert!(m.matches(b"", b"a.TXT", &mut s));
        assert!(m.matches(b"", b"x.tar.gz", &mut s));
        assert!(!m.matches(b"", b".txt", &mut s));
        assert!(!m.matches(b"", b"txt", &mut s));
    }
}
