//! How the metadata placeholders render: numbers, `ls -l`'s mode string,
//! local times, and user and group names (looked up once per thread).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::OnceLock;

use fnd_walk::{FileType, Metadata};

use super::Field;

pub(super) fn push_num(out: &mut Vec<u8>, n: u64) {
    let _ = write!(out, "{n}");
}

pub(super) fn render_meta(field: Field, meta: Option<&Metadata>, out: &mut Vec<u8>) {
    let Some(m) = meta else {
        // The entry vanished or cannot be stat'ed: `ls` shows `?` too.
        out.push(b'?');
        return;
    };
    match field {
        Field::Size => push_num(out, m.size),
        Field::Mtime => push_local_time(out, m.mtime),
        Field::Mode => {
            let _ = write!(out, "{:o}", m.permissions());
        }
        Field::Perms => push_perms(out, m.mode),
        Field::Inode => push_num(out, m.ino),
        Field::Nlink => push_num(out, m.nlink),
        Field::Uid => push_num(out, m.uid as u64),
        Field::Gid => push_num(out, m.gid as u64),
        Field::Owner => push_id_name(out, m.uid, IdKind::User),
        Field::Group => push_id_name(out, m.gid, IdKind::Group),
        _ => unreachable!("not a metadata field"),
    }
}

/// `ls -l`'s ten-character mode string.
pub fn push_perms(out: &mut Vec<u8>, mode: u32) {
    let kind = match FileType::from_mode(mode) {
        FileType::Dir => b'd',
        FileType::Symlink => b'l',
        FileType::BlockDevice => b'b',
        FileType::CharDevice => b'c',
        FileType::Fifo => b'p',
        FileType::Socket => b's',
        _ => b'-',
    };
    out.push(kind);
    let special = [(0o4000, b's', b'S'), (0o2000, b's', b'S'), (0o1000, b't', b'T')];
    for (i, (bit, set_x, set_no_x)) in special.into_iter().enumerate() {
        let shift = 6 - 3 * i;
        let rwx = (mode >> shift) & 7;
        out.push(if rwx & 4 != 0 { b'r' } else { b'-' });
        out.push(if rwx & 2 != 0 { b'w' } else { b'-' });
        let x = rwx & 1 != 0;
        out.push(match (mode & bit != 0, x) {
            (true, true) => set_x,
            (true, false) => set_no_x,
            (false, true) => b'x',
            (false, false) => b'-',
        });
    }
}

fn push_local_time(out: &mut Vec<u8>, secs: i64) {
    static ZONE: OnceLock<jiff::tz::TimeZone> = OnceLock::new();
    let zone = ZONE.get_or_init(jiff::tz::TimeZone::system);
    match jiff::Timestamp::from_second(secs) {
        Ok(ts) => {
            let _ = write!(out, "{}", ts.to_zoned(zone.clone()).strftime("%Y-%m-%d %H:%M:%S"));
        }
        // Past jiff's range (years beyond ±9999), as `ls` does: the number.
        Err(_) => {
            let _ = write!(out, "{secs}");
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum IdKind {
    User,
    Group,
}

/// User and group names by id.
type NameCache = HashMap<(IdKind, u32), Box<[u8]>>;

thread_local! {
    /// Names already looked up on this thread: a listing of one user's tree
    /// asks for the same id again and again.
    static ID_NAMES: RefCell<NameCache> = RefCell::new(HashMap::new());
}

/// The owner's name, or its number when no name resolves, as `ls -l`.
pub fn push_user_name(out: &mut Vec<u8>, uid: u32) {
    push_id_name(out, uid, IdKind::User);
}

/// The group's name, or its number when no name resolves, as `ls -l`.
pub fn push_group_name(out: &mut Vec<u8>, gid: u32) {
    push_id_name(out, gid, IdKind::Group);
}

fn push_id_name(out: &mut Vec<u8>, id: u32, kind: IdKind) {
    ID_NAMES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let name = cache.entry((kind, id)).or_insert_with(|| match lookup_id(id, kind) {
            Some(name) => name.into(),
            None => id.to_string().into_bytes().into(),
        });
        out.extend_from_slice(name);
    });
}

/// The user or group name of an id, through NSS.
fn lookup_id(id: u32, kind: IdKind) -> Option<Vec<u8>> {
    use nix::unistd::{Gid, Group, Uid, User};
    let name = match kind {
        IdKind::User => User::from_uid(Uid::from_raw(id)).ok()??.name,
        IdKind::Group => Group::from_gid(Gid::from_raw(id)).ok()??.name,
    };
    Some(name.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_past_the_calendar_print_as_seconds() {
        for secs in [i64::MIN, -(1 << 62), 1 << 62] {
            let mut out = Vec::new();
            push_local_time(&mut out, secs);
            assert_eq!(out, secs.to_string().as_bytes());
        }
    }

    #[test]
    fn perms_like_ls() {
        let mut out = Vec::new();
        push_perms(&mut out, 0o040755);
        push_perms(&mut out, 0o104755);
        push_perms(&mut out, 0o041777);
        push_perms(&mut out, 0o100644);
        assert_eq!(out, b"drwxr-xr-x-rwsr-xr-xdrwxrwxrwt-rw-r--r--");
    }
}
