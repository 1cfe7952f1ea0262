//! What the name (or, with `-p`, the absolute path) must look like: the
//! pattern and `--and` patterns as regular expressions over bytes (globs and
//! literals are turned into regexes, as fd does), and `-e` extensions.

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Class, Hir, HirKind, Literal, Look};

mod spelled;

use spelled::Spelled;

/// How pattern text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Regex,
    Glob,
    Fixed,
    Exact,
}

/// Everything the name or path must match.
#[derive(Clone, Debug)]
pub struct NameMatcher {
    /// All must match; empty patterns (which match everything) are left out.
    patterns: Vec<Pattern>,
    /// One must match.
    extensions: Option<Extensions>,
    /// With `-p`: the working directory, prepended to relative paths.
    pub full_path_base: Option<Vec<u8>>,
    /// Byte strings one of which every matching name holds, when the
    /// patterns tell.
    literals: Option<Literals>,
}

/// Byte strings one of which every name that matches holds.
#[derive(Clone, Debug)]
pub struct Literals {
    pub strings: Vec<Vec<u8>>,
    /// The strings are in ASCII lowercase and held in either ASCII case.
    pub ascii_case_insensitive: bool,
}

/// More literals than this are folded to ASCII lowercase. Folded, the
/// 32 spellings of a case-insensitive `lexer71` are one string searched
/// in either case, which took 1.9 ms of million's names against 2.5 ms
/// for the 32.
const MAX_LITERALS: usize = 1;

/// One pattern: spelled out when it can be, else a regex.
#[derive(Clone, Debug)]
enum Pattern {
    Spelled(Spelled),
    Regex(Regex, Option<Endings>),
}

/// The `-e` extensions, as patterns `.\.EXT$`.
#[derive(Clone, Debug)]
enum Extensions {
    Spelled(Vec<Spelled>),
    Regex(RegexSet, Option<Endings>),
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
    parse_with(pattern, false, false)
}

/// The pattern as the regex crate reads it (on bytes) with these flags.
pub(crate) fn parse_with(pattern: &str, case_insensitive: bool, dot_matches_new_line: bool) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(case_insensitive)
        .dot_matches_new_line(dot_matches_new_line)
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
            HirKind::Class(Class::Bytes(ranges)) => ranges
                .iter()
                .any(|r| char::from(r.start()).is_uppercase() || char::from(r.end()).is_uppercase()),
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
    matches!(hirs.first().map(Hir::kind), Some(HirKind::Look(Look::Start)))
        && matches!(hirs.get(1).map(Hir::kind), Some(HirKind::Literal(Literal(b))) if b.starts_with(b"."))
}

impl NameMatcher {
    /// Compile the patterns (regex sources) and extensions; those that
    /// only spell characters are matched without a regex.
    pub fn new(
        sources: &[String],
        case_sensitive: bool,
        extensions: &[String],
        full_path_base: Option<Vec<u8>>,
    ) -> Result<Self, String> {
        let names = full_path_base.is_none();
        let patterns = sources
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let hir = parse_with(s, !case_sensitive, true);
                if let Some(spelled) = hir.as_ref().and_then(|hir| Spelled::of(hir, names)) {
                    return Ok(Pattern::Spelled(spelled));
                }
                let regex = RegexBuilder::new(s)
                    .case_insensitive(!case_sensitive)
                    .dot_matches_new_line(true)
                    .build()
                    .map_err(|e| {
                        format!(
                        "{e}\n\nNote: You can search for literal substrings with '--fixed-strings' or literal strings \
                         with '--exact' options (instead of a regular expression). Alternatively, you can also use \
                         the '--glob' option to match on a glob pattern."
                    )
                    })?;
                Ok(Pattern::Regex(regex, hir.as_ref().and_then(|hir| Endings::of([hir]))))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let ext_sources: Vec<String> = extensions
            .iter()
            .map(|e| format!(r".\.{}$", regex::escape(e.trim_start_matches('.'))))
            .collect();
        let hirs: Option<Vec<Hir>> = ext_sources.iter().map(|s| parse_with(s, true, false)).collect();
        // All patterns must match, so the literals of any one do; else
        // one extension must, so those of all of them.
        let literals = sources
            .iter()
            .filter(|s| !s.is_empty())
            .find_map(|s| parse_with(s, !case_sensitive, true).and_then(|h| literals_of([&h])))
            .or_else(|| hirs.as_deref().filter(|h| !h.is_empty()).and_then(literals_of));
        let extensions = if ext_sources.is_empty() {
            None
        } else {
            let sources = ext_sources;
            let spelled: Option<Vec<Spelled>> = hirs
                .as_ref()
                .and_then(|hirs| hirs.iter().map(|hir| Spelled::of(hir, true)).collect());
            Some(match spelled {
                Some(spelled) => Extensions::Spelled(spelled),
                None => {
                    let set = RegexSetBuilder::new(&sources)
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| e.to_string())?;
                    Extensions::Regex(set, hirs.as_deref().and_then(Endings::of))
                }
            })
        };
        Ok(NameMatcher {
            patterns,
            extensions,
            full_path_base,
            literals,
        })
    }

    /// Byte strings one of which every name that matches holds; `None`
    /// when the patterns do not tell, or match paths (`-p`). A table of
    /// names can be searched for them instead of matching every name.
    pub fn literals(&self) -> Option<&Literals> {
        self.literals.as_ref().filter(|_| self.full_path_base.is_none())
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
            if !self.patterns.iter().all(|pattern| pattern.is_match(subject)) {
                return false;
            }
        }
        self.extensions.as_ref().is_none_or(|extensions| match extensions {
            Extensions::Spelled(spelled) => spelled.iter().any(|s| s.is_match(name)),
            Extensions::Regex(set, endings) => endings.as_ref().is_none_or(|e| e.admit(name)) && set.is_match(name),
        })
    }
}

/// The literals of `hirs` (one of which every match of any of them
/// holds): their prefixes, else their suffixes; `None` when one can match
/// without any.
fn literals_of<'a>(hirs: impl IntoIterator<Item = &'a Hir> + Clone) -> Option<Literals> {
    [ExtractKind::Prefix, ExtractKind::Suffix].into_iter().find_map(|kind| {
        let mut strings = Vec::new();
        for hir in hirs.clone() {
            let seq = Extractor::new().kind(kind.clone()).extract(hir);
            let literals = seq.literals().filter(|l| l.iter().all(|l| !l.is_empty()))?;
            strings.extend(literals.iter().map(|l| l.as_bytes().to_vec()));
        }
        let fold = strings.len() > MAX_LITERALS;
        if fold {
            strings.iter_mut().for_each(|s| s.make_ascii_lowercase());
        }
        strings.sort_unstable();
        strings.dedup();
        Some(Literals {
            strings,
            ascii_case_insensitive: fold,
        })
    })
}

/// The endings one of which every match must have, for patterns that only
/// match at the end of the subject (`\.rs$`, and every `-e`): a name
/// without one is turned down by a byte comparison instead of a regex
/// search, which cost about 40 ns a name and 18% of a regex search's CPU
/// time. Endings are kept in ASCII lowercase and compared without regard
/// to ASCII case, which admits a few names more (the regex decides) but
/// keeps a case-insensitive pattern to one ending per spelling (`.tar.gz`
/// would be 32); other case variants (`ſ` for `s`) stay endings of their own.
#[derive(Clone, Debug)]
struct Endings {
    endings: Vec<Vec<u8>>,
    /// The bytes an ending ends with, in either ASCII case: most names
    /// are turned down by their last byte alone (comparing whole endings
    /// first took 14% of a search's user time).
    last_bytes: Box<[bool; 256]>,
}

/// More endings than this cost more to compare than the regex saves.
const MAX_ENDINGS: usize = 16;

impl Endings {
    /// The endings of all of `hirs` (patterns as parsed with the regex's
    /// flags), if each of them matches only at the end and has few enough
    /// endings.
    fn of<'a>(hirs: impl IntoIterator<Item = &'a Hir>) -> Option<Endings> {
        let mut endings = Vec::new();
        for hir in hirs {
            if !hir.properties().look_set_suffix().contains(Look::End) {
                return None;
            }
            let seq = Extractor::new().kind(ExtractKind::Suffix).extract(hir);
            // An empty ending admits everything; no literal at all, nothing:
            // neither is worth a check.
            let literals = seq
                .literals()
                .filter(|l| !l.is_empty() && l.iter().all(|l| !l.is_empty()))?;
            endings.extend(literals.iter().map(|l| l.as_bytes().to_ascii_lowercase()));
        }
        endings.sort_unstable();
        endings.dedup();
        // Too many: keep only their last bytes (a name with the whole
        // ending has those too), fewer of them until few enough differ.
        while endings.len() > MAX_ENDINGS {
            let keep = endings.iter().map(Vec::len).max().unwrap_or(0).saturating_sub(1);
            if keep == 0 {
                return None;
            }
            for e in &mut endings {
                e.drain(..e.len().saturating_sub(keep));
            }
            endings.sort_unstable();
            endings.dedup();
        }
        if endings.is_empty() {
            return None;
        }
        let mut last_bytes = Box::new([false; 256]);
        for &b in endings.iter().filter_map(|e| e.last()) {
            last_bytes[usize::from(b)] = true;
            last_bytes[usize::from(b.to_ascii_uppercase())] = true;
        }
        Some(Endings { endings, last_bytes })
    }

    /// Could a match end `subject`? False means the regex cannot match.
    #[inline]
    fn admit(&self, subject: &[u8]) -> bool {
        subject.last().is_some_and(|&b| self.last_bytes[usize::from(b)])
            && self
                .endings
                .iter()
                .any(|e| subject.len() >= e.len() && subject[subject.len() - e.len()..].eq_ignore_ascii_case(e))
    }
}

impl Pattern {
    #[inline]
    fn is_match(&self, subject: &[u8]) -> bool {
        match self {
            Pattern::Spelled(spelled) => spelled.is_match(subject),
            Pattern::Regex(regex, endings) => {
                endings.as_ref().is_none_or(|e| e.admit(subject)) && regex.is_match(subject)
            }
        }
    }
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

    /// Every name that matches holds one of the literals, in the case
    /// they say; patterns that can match without one give none.
    #[test]
    fn literals_are_held_by_every_match() {
        let holds = |m: &NameMatcher, name: &[u8]| {
            let l = m.literals().unwrap();
            l.strings.iter().any(|s| {
                name.windows(s.len()).any(|w| match l.ascii_case_insensitive {
                    true => w.eq_ignore_ascii_case(s),
                    false => w == &s[..],
                })
            })
        };
        let cases: &[(&str, bool, &[&str])] = &[
            (
                "lexer71.java",
                false,
                &["lexer71.java", "LEXER71xjava", "aLexer71.JAVA"],
            ),
            ("main_types", false, &["main_types.h", "MAIN_TYPES", "main_typeſ"]),
            ("Main", true, &["Main.rs", "xMain"]),
            (r"\.rs$", true, &["a.rs"]),
            ("a|bc", true, &["xa", "bcx"]),
        ];
        for &(pattern, case_sensitive, names) in cases {
            let m = NameMatcher::new(&[pattern.into()], case_sensitive, &[], None).unwrap();
            for name in names {
                assert!(m.matches(b"", name.as_bytes(), &mut Vec::new()), "{pattern} {name}");
                assert!(holds(&m, name.as_bytes()), "{pattern} {name}");
            }
        }
        let ext = NameMatcher::new(&[], false, &["rs".into(), "c".into()], None).unwrap();
        assert!(holds(&ext, b"main.RS") && holds(&ext, b"x.c"));
        for pattern in ["^", ".", "a*"] {
            let m = NameMatcher::new(&[pattern.into()], false, &[], None).unwrap();
            assert!(m.literals().is_none(), "{pattern}");
        }
        let paths = NameMatcher::new(&["src".into()], false, &[], Some(b"/".to_vec())).unwrap();
        assert!(paths.literals().is_none());
    }

    #[test]
    fn smart_case() {
        assert!(has_uppercase("foo.EXE"));
        assert!(has_uppercase("foo.[a-zA-Z]"));
        assert!(!has_uppercase(r"\Acargo"));
        assert!(!has_uppercase(r"carg\x6F"));
    }

    #[test]
    fn any_character_agrees_with_the_regex() {
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

    /// The endings of these sources, parsed with these flags.
    fn endings_of(sources: &[&str], case_insensitive: bool, dot_matches_new_line: bool) -> Option<Endings> {
        let hirs: Vec<Hir> = sources
            .iter()
            .map(|s| parse_with(s, case_insensitive, dot_matches_new_line).unwrap())
            .collect();
        Endings::of(&hirs)
    }

    #[test]
    fn endings_are_found_only_for_patterns_anchored_at_the_end() {
        assert!(endings_of(&[r"[0-9]\.rs$"], false, true).is_some());
        // Case-insensitive: one ending per ASCII spelling, and `ſ` for `s`.
        let e = endings_of(&[r"[0-9]\.rs$"], true, true).unwrap();
        assert!(e.endings.contains(&b"7.rs".to_vec()) && e.endings.contains(&".r\u{17f}".as_bytes().to_vec()));
        // Too many to compare: cut down to the bytes they end with.
        let e = endings_of(&[r"[a-z][0-9]\.(rs|gz|py|go|js)$"], false, true).unwrap();
        assert!(
            e.endings.len() <= MAX_ENDINGS && e.endings.contains(&b".rs".to_vec()),
            "{:?}",
            e.endings
        );
        assert!(endings_of(&[r".\.rs$", r".\.tar\.gz$"], true, false).is_some());
        assert!(endings_of(&[r"\.rs"], false, true).is_none());
        assert!(endings_of(&[r"a$|b"], false, true).is_none());
        assert!(endings_of(&[r"$"], false, true).is_none());
        assert!(endings_of(&[r"\w$"], false, true).is_none());
    }

    #[test]
    fn endings_never_turn_down_a_match() {
        let names: [&[u8]; 14] = [
            b"main.rs",
            b"a1.rs",
            b"A1.RS",
            b"x.r\xc5\xbf",
            b"9.R\xc5\xbf",
            b"rs",
            b".rs",
            b"\n.rs",
            b"a.rs.bak",
            b"\xff.rs",
            b"\xe2\x84\xaa",
            b"k",
            b"a.tar.gz",
            b"a.TAR.GZ",
        ];
        // Through the regex path, which spelled patterns would bypass.
        for pattern in [r"[0-9]\.rs$", r"\.rs$", r"s$", r"k$", r"(rs|gz)$", r"^a.*\.gz$"] {
            for case_sensitive in [true, false] {
                let regex = RegexBuilder::new(pattern)
                    .case_insensitive(!case_sensitive)
                    .dot_matches_new_line(true)
                    .build()
                    .unwrap();
                let m = Pattern::Regex(regex.clone(), endings_of(&[pattern], !case_sensitive, true));
                for name in names {
                    assert_eq!(
                        m.is_match(name),
                        regex.is_match(name),
                        "{pattern} {case_sensitive} {name:?}"
                    );
                }
            }
        }
        let sources = [r".\.rs$", r".\.tar\.gz$", r".\.k$"];
        let set = RegexSetBuilder::new(sources).case_insensitive(true).build().unwrap();
        let endings = endings_of(&sources, true, false).unwrap();
        let spelled = NameMatcher::new(&[], false, &["rs".into(), "tar.gz".into(), "k".into()], None).unwrap();
        for name in names.iter().chain([&b"a.\xe2\x84\xaa"[..], b"a.K", b"a\n.rs"].iter()) {
            assert_eq!(
                endings.admit(name) && set.is_match(name),
                set.is_match(name),
                "{name:?}"
            );
            assert_eq!(
                spelled.matches(b"", name, &mut Vec::new()),
                set.is_match(name),
                "{name:?}"
            );
        }
    }
}
