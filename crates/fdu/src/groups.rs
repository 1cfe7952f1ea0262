//! `--by`: which group an entry falls in, and what each group adds up to.
//!
//! A group is the entry's values for the keys asked for, packed into a few
//! bytes (an id, a type or an age bucket, an extension with its length),
//! so that a scan adds an entry to its group without allocating: the
//! packed key is written into a reused buffer and looked up by slice.
//! Memory is one small key and three counters per group, whatever the
//! number of entries. Names of users and groups are looked up once per
//! id, when the table is printed (`crate::report`), never per entry.

use std::collections::HashMap;

use crate::settings::GroupKey;

/// The keys `--by` takes, as they are spelled.
pub const KEY_NAMES: [(&str, GroupKey); 5] = [
    ("user", GroupKey::User),
    ("group", GroupKey::Group),
    ("ext", GroupKey::Ext),
    ("type", GroupKey::Type),
    ("age", GroupKey::Age),
];

/// `--by`'s argument: keys separated by commas, each at most once.
pub fn parse_keys(text: &str) -> Result<Vec<GroupKey>, String> {
    let mut keys = Vec::new();
    for word in text.split(',') {
        let word = word.trim();
        let Some(&(_, key)) = KEY_NAMES.iter().find(|(name, _)| *name == word) else {
            let valid: Vec<&str> = KEY_NAMES.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown --by key '{}' (valid keys: {})",
                word.escape_debug(),
                valid.join(", ")
            ));
        };
        if keys.contains(&key) {
            return Err(format!("--by names '{word}' twice"));
        }
        keys.push(key);
    }
    Ok(keys)
}

/// The age buckets, youngest first, with their upper bounds in seconds.
pub const AGES: [(&str, i64); 6] = [
    ("< 1 day", 86_400),
    ("< 1 week", 7 * 86_400),
    ("< 1 month", 30 * 86_400),
    ("< 1 year", 365 * 86_400),
    ("< 3 years", 3 * 365 * 86_400),
    ("older", i64::MAX),
];

/// The bucket of a time `secs` seen at `now` (a time in the future is
/// less than a day old).
pub fn age_bucket(now: i64, secs: i64) -> u8 {
    let age = now.saturating_sub(secs);
    AGES.iter()
        .position(|&(_, bound)| age < bound)
        .unwrap_or(AGES.len() - 1) as u8
}

/// The types `--by type` tells apart, by their code.
pub const TYPES: [&str; 8] = ["file", "dir", "symlink", "fifo", "socket", "char", "block", "other"];

/// The type code of a `st_mode`.
pub fn type_code(mode: u32) -> u8 {
    match mode & libc::S_IFMT {
        libc::S_IFREG => 0,
        libc::S_IFDIR => 1,
        libc::S_IFLNK => 2,
        libc::S_IFIFO => 3,
        libc::S_IFSOCK => 4,
        libc::S_IFCHR => 5,
        libc::S_IFBLK => 6,
        _ => 7,
    }
}

/// The final extension of a name, lower-cased: what follows its last dot,
/// if that dot is neither the first byte (`.bashrc` has none) nor the last.
pub fn extension(name: &[u8]) -> Option<&[u8]> {
    let dot = name.iter().rposition(|&b| b == b'.')?;
    (dot > 0 && dot + 1 < name.len()).then(|| &name[dot + 1..])
}

/// What an entry is, as far as the keys ask.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    pub uid: u32,
    pub gid: u32,
    pub type_code: u8,
    /// The time `--time` picks, in seconds.
    pub time: i64,
    /// The entry's name (its last component).
    pub name: &'a [u8],
}

/// What a group adds up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub disk: u64,
    pub apparent: u64,
    pub count: u64,
}

impl Tally {
    /// Saturating: the counters may come from a file or another rank.
    pub fn add(&mut self, other: Tally) {
        self.disk = self.disk.saturating_add(other.disk);
        self.apparent = self.apparent.saturating_add(other.apparent);
        self.count = self.count.saturating_add(other.count);
    }
}

/// One value of a group, unpacked for printing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    User(u32),
    Group(u32),
    /// `None`: no extension.
    Ext(Option<Vec<u8>>),
    Type(u8),
    Age(u8),
}

/// The groups met and their tallies.
#[derive(Clone, Debug, Default)]
pub struct Table {
    groups: HashMap<Box<[u8]>, Tally>,
}

/// Packs an entry's group for `keys` (the extension lower-cased), reusing `buf`.
pub fn pack(keys: &[GroupKey], now: i64, facts: &Facts<'_>, buf: &mut Vec<u8>) {
    buf.clear();
    for key in keys {
        match key {
            GroupKey::User => buf.extend_from_slice(&facts.uid.to_le_bytes()),
            GroupKey::Group => buf.extend_from_slice(&facts.gid.to_le_bytes()),
            GroupKey::Type => buf.push(facts.type_code),
            GroupKey::Age => buf.push(age_bucket(now, facts.time)),
            GroupKey::Ext => match extension(facts.name) {
                None => buf.push(0),
                Some(ext) => {
                    buf.push(1);
                    let lower = lower_case(ext);
                    // A name is at most 255 bytes; a longer one is cut, not refused.
                    let lower = &lower[..lower.len().min(u16::MAX as usize)];
                    buf.extend_from_slice(&(lower.len() as u16).to_le_bytes());
                    buf.extend_from_slice(lower);
                }
            },
        }
    }
}

/// Lower case: Unicode's where the bytes are UTF-8, ASCII's otherwise.
fn lower_case(ext: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match std::str::from_utf8(ext) {
        Ok(s) if s.is_ascii() => {
            if ext.iter().any(u8::is_ascii_uppercase) {
                ext.to_ascii_lowercase().into()
            } else {
                ext.into()
            }
        }
        Ok(s) => s.to_lowercase().into_bytes().into(),
        Err(_) => ext.to_ascii_lowercase().into(),
    }
}

/// A packed group, unpacked; `None` when the bytes do not fit the keys
/// (they came from another rank, and are checked).
pub fn unpack(keys: &[GroupKey], mut bytes: &[u8]) -> Option<Vec<Part>> {
    let mut parts = Vec::with_capacity(keys.len());
    let take = |n: usize, bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let (head, tail) = (bytes.get(..n)?.to_vec(), bytes.get(n..)?);
        *bytes = tail;
        Some(head)
    };
    for key in keys {
        let part = match key {
            GroupKey::User | GroupKey::Group => {
                let id = u32::from_le_bytes(take(4, &mut bytes)?.try_into().ok()?);
                if *key == GroupKey::User {
                    Part::User(id)
                } else {
                    Part::Group(id)
                }
            }
            GroupKey::Type => Part::Type(*take(1, &mut bytes)?.first().filter(|&&t| (t as usize) < TYPES.len())?),
            GroupKey::Age => Part::Age(*take(1, &mut bytes)?.first().filter(|&&a| (a as usize) < AGES.len())?),
            GroupKey::Ext => match take(1, &mut bytes)?[0] {
                0 => Part::Ext(None),
                1 => {
                    let len = u16::from_le_bytes(take(2, &mut bytes)?.try_into().ok()?);
                    Part::Ext(Some(take(len as usize, &mut bytes)?))
                }
                _ => return None,
            },
        };
        parts.push(part);
    }
    bytes.is_empty().then_some(parts)
}

impl Table {
    /// Add `tally` to the group packed in `key`.
    pub fn add(&mut self, key: &[u8], tally: Tally) {
        match self.groups.get_mut(key) {
            Some(t) => t.add(tally),
            None => {
                self.groups.insert(key.into(), tally);
            }
        }
    }

    /// Another table's groups added to these.
    pub fn merge(&mut self, other: Table) {
        if self.groups.is_empty() {
            *self = other;
            return;
        }
        for (key, tally) in other.groups {
            self.add(&key, tally);
        }
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The groups, packed, and their tallies, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Tally)> {
        self.groups.iter().map(|(k, t)| (&**k, t))
    }

    /// The table in bytes, for another rank: per group its key's length,
    /// the key, and the three counters (little-endian).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (key, t) in &self.groups {
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
            for n in [t.disk, t.apparent, t.count] {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        out
    }

    /// What [`Table::encode`] wrote, checked against `keys`.
    pub fn decode(keys: &[GroupKey], mut bytes: &[u8]) -> Result<Table, &'static str> {
        let mut table = Table::default();
        let cut = "a table of groups cut short";
        while !bytes.is_empty() {
            let len = u32::from_le_bytes(bytes.get(..4).ok_or(cut)?.try_into().map_err(|_| cut)?) as usize;
            let key = bytes.get(4..4 + len).ok_or(cut)?;
            if unpack(keys, key).is_none() {
                return Err("a group that does not fit the keys");
            }
            let mut n = [0u64; 3];
            for (i, v) in n.iter_mut().enumerate() {
                let at = 4 + len + 8 * i;
                *v = u64::from_le_bytes(bytes.get(at..at + 8).ok_or(cut)?.try_into().map_err(|_| cut)?);
            }
            table.add(
                key,
                Tally {
                    disk: n[0],
                    apparent: n[1],
                    count: n[2],
                },
            );
            bytes = &bytes[4 + len + 24..];
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_bad_ones_are_named() {
        assert_eq!(parse_keys("user,ext").unwrap(), [GroupKey::User, GroupKey::Ext]);
        assert_eq!(parse_keys("age").unwrap(), [GroupKey::Age]);
        let e = parse_keys("user,colour").unwrap_err();
        assert!(
            e.contains("'colour'") && e.contains("user, group, ext, type, age"),
            "{e}"
        );
        assert!(parse_keys("").is_err());
        assert!(parse_keys("user,").is_err());
        assert!(parse_keys("user,user").unwrap_err().contains("twice"));
    }

    #[test]
    fn extensions_are_final_and_lower_cased() {
        assert_eq!(extension(b"a.tar.GZ"), Some(&b"GZ"[..]));
        assert_eq!(extension(b".bashrc"), None);
        assert_eq!(extension(b"Makefile"), None);
        assert_eq!(extension(b"trailing."), None);
        assert_eq!(&*lower_case(b"GZ"), b"gz");
        assert_eq!(&*lower_case("ÄB".as_bytes()), "äb".as_bytes());
        assert_eq!(&*lower_case(b"X\xff"), b"x\xff");
    }

    #[test]
    fn ages_fall_in_their_buckets() {
        let now = 1_000_000_000;
        assert_eq!(age_bucket(now, now + 50), 0, "the future is young");
        assert_eq!(age_bucket(now, now - 3600), 0);
        assert_eq!(age_bucket(now, now - 2 * 86_400), 1);
        assert_eq!(age_bucket(now, now - 10 * 86_400), 2);
        assert_eq!(age_bucket(now, now - 100 * 86_400), 3);
        assert_eq!(age_bucket(now, now - 400 * 86_400), 4);
        assert_eq!(age_bucket(now, now - 2000 * 86_400), 5);
        assert_eq!(age_bucket(now, i64::MIN), 5);
    }

    #[test]
    fn groups_pack_unpack_and_travel() {
        let keys = [
            GroupKey::User,
            GroupKey::Ext,
            GroupKey::Type,
            GroupKey::Age,
            GroupKey::Group,
        ];
        let facts = Facts {
            uid: 1000,
            gid: 7,
            type_code: type_code(libc::S_IFREG | 0o644),
            time: 0,
            name: b"notes.TXT",
        };
        let mut buf = Vec::new();
        pack(&keys, 100, &facts, &mut buf);
        let parts = unpack(&keys, &buf).unwrap();
        assert_eq!(
            parts,
            [
                Part::User(1000),
                Part::Ext(Some(b"txt".to_vec())),
                Part::Type(0),
                Part::Age(0),
                Part::Group(7)
            ]
        );
        let mut table = Table::default();
        let one = Tally {
            disk: 4096,
            apparent: 5,
            count: 1,
        };
        table.add(&buf, one);
        table.add(&buf, one);
        let back = Table::decode(&keys, &table.encode()).unwrap();
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            [(
                &buf[..],
                &Tally {
                    disk: 8192,
                    apparent: 10,
                    count: 2
                }
            )]
        );
        assert!(Table::decode(&keys, &table.encode()[..10]).is_err());
        assert!(Table::decode(&[GroupKey::User], &table.encode()).is_err());
    }
}
