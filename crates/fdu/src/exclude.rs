//! du's `--exclude`: shell patterns matched against the whole path and
//! against every tail of it that starts after a `/`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub struct Excludes(Option<globset::GlobSet>);

impl Excludes {
    /// Compile the patterns (an error names the bad one, in globset's words).
    pub fn new(patterns: &[String]) -> Result<Excludes, String> {
        if patterns.is_empty() {
            return Ok(Excludes(None));
        }
        let mut set = globset::GlobSetBuilder::new();
        for p in patterns {
            let glob = globset::GlobBuilder::new(p)
                .literal_separator(false)
                .backslash_escape(true)
                .build()
                .map_err(|e| e.to_string())?;
            set.add(glob);
        }
        Ok(Excludes(Some(set.build().map_err(|e| e.to_string())?)))
    }

    /// Whether there are patterns at all.
    pub fn any(&self) -> bool {
        self.0.is_some()
    }

    /// Whether `path` is excluded.
    pub fn matches(&self, path: &[u8]) -> bool {
        let Some(set) = &self.0 else { return false };
        let matches = |p: &[u8]| set.is_match(Path::new(OsStr::from_bytes(p)));
        matches(path)
            || path
                .iter()
                .enumerate()
                .any(|(i, &b)| b == b'/' && i + 1 < path.len() && path[i + 1] != b'/' && matches(&path[i + 1..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_path_or_a_tail_of_it() {
        let ex = Excludes::new(&["*.o".into(), "build".into()]).unwrap();
        assert!(ex.matches(b"src/a.o"));
        assert!(ex.matches(b"x/build"));
        assert!(!ex.matches(b"x/builder"));
        assert!(!Excludes::new(&[]).unwrap().matches(b"anything"));
    }
}
