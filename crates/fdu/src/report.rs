//! `--by`'s output: one line per group, largest first,
//!
//! ```text
//! DISK<TAB>APPARENT<TAB>COUNT<TAB>KEY[<TAB>KEY...]
//! ```
//!
//! sizes in du's units (`-h`, `-k`, `-b`, `--si`, `-B`...), the groups
//! ordered by what the run measures (disk usage; apparent size with `-A`
//! or `-b`; entries with `--inodes`). With `--top N` the groups past the
//! first N share one line, `(K more)`; `-c` adds a `total` line. Users and
//! groups are named by the system's databases, each id looked up once
//! (`--numeric-ids`: never), a number where no name resolves.

use std::collections::HashMap;
use std::ffi::CStr;

use crate::groups::{Part, Table, Tally, AGES, TYPES};
use crate::settings::{GroupKey, Measure, Settings};

/// The table as lines, for stdout.
pub fn render(table: &Table, settings: &Settings) -> Vec<u8> {
    let keys = &settings.by;
    let mut names = Names::new(settings.numeric_ids);
    let mut rows: Vec<(Vec<Vec<u8>>, Tally)> = table
        .iter()
        .filter_map(|(key, tally)| {
            let parts = crate::groups::unpack(keys, key)?;
            Some((parts.iter().map(|p| names.spell(p)).collect(), *tally))
        })
        .collect();
    let measure = |t: &Tally| match settings.measure {
        Measure::Disk => t.disk,
        Measure::Apparent => t.apparent,
        Measure::Inodes => t.count,
    };
    rows.sort_by(|a, b| measure(&b.1).cmp(&measure(&a.1)).then_with(|| a.0.cmp(&b.0)));
    let end = if settings.null { 0 } else { b'\n' };
    let mut out = Vec::new();
    let line = |out: &mut Vec<u8>, tally: &Tally, labels: &[Vec<u8>]| {
        settings.size.write(tally.disk, out);
        out.push(b'\t');
        settings.size.write(tally.apparent, out);
        out.push(b'\t');
        crate::format::write_u64(tally.count, out);
        for label in labels {
            out.push(b'\t');
            out.extend_from_slice(label);
        }
        out.push(end);
    };
    let shown = if settings.top == 0 {
        rows.len()
    } else {
        settings.top.min(rows.len())
    };
    let mut total = Tally::default();
    for (labels, tally) in &rows[..shown] {
        line(&mut out, tally, labels);
        total.add(*tally);
    }
    if shown < rows.len() {
        let mut rest = Tally::default();
        rows[shown..].iter().for_each(|(_, t)| rest.add(*t));
        total.add(rest);
        line(
            &mut out,
            &rest,
            &[format!("({} more)", rows.len() - shown).into_bytes()],
        );
    }
    if settings.total {
        line(&mut out, &total, &[b"total".to_vec()]);
    }
    out
}

/// Users' and groups' names, each looked up once.
struct Names {
    numeric: bool,
    users: HashMap<u32, Vec<u8>>,
    groups: HashMap<u32, Vec<u8>>,
}

impl Names {
    fn new(numeric: bool) -> Names {
        Names {
            numeric,
            users: HashMap::new(),
            groups: HashMap::new(),
        }
    }

    fn spell(&mut self, part: &Part) -> Vec<u8> {
        match part {
            Part::User(id) => self.user(*id),
            Part::Group(id) => self.group(*id),
            Part::Ext(Some(ext)) => ext.clone(),
            Part::Ext(None) => b"(none)".to_vec(),
            Part::Type(t) => TYPES[*t as usize].as_bytes().to_vec(),
            Part::Age(a) => AGES[*a as usize].0.as_bytes().to_vec(),
        }
    }

    fn user(&mut self, id: u32) -> Vec<u8> {
        let numeric = self.numeric;
        self.users
            .entry(id)
            .or_insert_with(|| {
                (!numeric)
                    .then(|| user_name(id))
                    .flatten()
                    .unwrap_or_else(|| id.to_string().into_bytes())
            })
            .clone()
    }

    fn group(&mut self, id: u32) -> Vec<u8> {
        let numeric = self.numeric;
        self.groups
            .entry(id)
            .or_insert_with(|| {
                (!numeric)
                    .then(|| group_name(id))
                    .flatten()
                    .unwrap_or_else(|| id.to_string().into_bytes())
            })
            .clone()
    }
}

/// A user's name from the system's database (NSS: files, LDAP...).
fn user_name(uid: u32) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: zeroed is a valid passwd; getpwuid_r writes into it and
        // `buf`, and `found` points at `pwd` or is null.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated name inside `buf`.
        return Some(unsafe { CStr::from_ptr(pwd.pw_name) }.to_bytes().to_vec());
    }
}

/// A group's name from the system's database.
fn group_name(gid: u32) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: as in `user_name`.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        let rc = unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || grp.gr_name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated name inside `buf`.
        return Some(unsafe { CStr::from_ptr(grp.gr_name) }.to_bytes().to_vec());
    }
}

/// Whether every key can be answered from an export that carries only
/// some fields: the first key that cannot, and the field it needs.
pub fn missing_field(
    keys: &[GroupKey],
    has_uid: bool,
    has_gid: bool,
    has_mtime: bool,
) -> Option<(&'static str, &'static str)> {
    keys.iter().find_map(|k| match k {
        GroupKey::User if !has_uid => Some(("user", "uid")),
        GroupKey::Group if !has_gid => Some(("group", "gid")),
        GroupKey::Age if !has_mtime => Some(("age", "mtime")),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::{pack, Facts};

    #[test]
    fn largest_first_top_and_total() {
        let mut settings = match crate::cli::parse(
            ["fdu", "--by", "type", "--numeric-ids", "-b", "--top", "1", "-c"]
                .iter()
                .map(Into::into)
                .collect(),
        ) {
            Ok(crate::cli::Parsed::Run(s)) => *s,
            _ => panic!("parses"),
        };
        settings.by = vec![GroupKey::Type];
        let mut table = Table::default();
        let mut buf = Vec::new();
        for (code, apparent) in [(0u8, 10u64), (1, 30), (2, 5)] {
            let facts = Facts {
                uid: 0,
                gid: 0,
                type_code: code,
                time: 0,
                name: b"x",
            };
            pack(&settings.by, 0, &facts, &mut buf);
            table.add(
                &buf,
                Tally {
                    disk: 0,
                    apparent,
                    count: 1,
                },
            );
        }
        let text = String::from_utf8(render(&table, &settings)).unwrap();
        assert_eq!(text, "0\t30\t1\tdir\n0\t15\t2\t(2 more)\n0\t45\t3\ttotal\n");
    }

    #[test]
    fn a_missing_field_is_named() {
        assert_eq!(
            missing_field(&[GroupKey::Ext, GroupKey::User], false, true, true),
            Some(("user", "uid"))
        );
        assert_eq!(
            missing_field(&[GroupKey::Ext, GroupKey::Type], false, false, false),
            None
        );
    }
}
