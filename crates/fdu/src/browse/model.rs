//! What the browser shows and how keys change it, without a terminal: the
//! scanned tree, the folder being looked at, its entries in the order
//! asked for, the cursor, and the dialog open (help, a confirmation). The
//! file system is reached only through [`Actions`] (delete, rescan), so
//! tests drive every key with a fake one.
//!
//! Keys follow ncdu: arrows or `hjkl` move, Enter or `l` opens a folder,
//! Backspace or `h` goes up, `s` `n` `C` `M` sort (again: reversed), `a`
//! shows apparent sizes, `d` deletes after a confirmation, `r` rescans the
//! folder, `?` shows help, `q` quits.

use crate::tree::{Change, Detail, Root, TreeNode};

/// How the entries of a folder are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// By size (disk usage, or apparent size when shown), largest first.
    Size,
    /// By name, A first.
    Name,
    /// By number of entries below, most first.
    Items,
    /// By modification time, newest first.
    Mtime,
}

/// A key the browser knows, from whatever terminal library read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Open the folder under the cursor (Enter, Right, `l`).
    Open,
    /// Go to the parent folder (Backspace, Left, `h`, `<`).
    Back,
    Char(char),
    /// Esc: closes a dialog.
    Cancel,
    /// Ctrl-C.
    Interrupt,
}

/// What happens after a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Continue,
    Quit,
}

/// A window over the current folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dialog {
    Help,
    /// Delete the entry at this row? It names what and how much.
    ConfirmDelete {
        row: usize,
    },
    /// Something to read before going on (what could not be deleted…).
    Message(String),
}

/// What the browser asks of the file system.
pub trait Actions {
    /// Delete `name` in the folder `below` (names joined by `/`, empty for
    /// the root itself) under the scanned `root`: `Ok` when all of it
    /// went, else what to tell the user.
    fn delete(&mut self, root: &[u8], below: &[u8], name: &[u8]) -> Result<(), String>;
    /// Scan the folder at `path` again: its new node and detail.
    fn rescan(&mut self, path: &[u8]) -> Option<(TreeNode, Detail)>;
}

/// One row of the current folder.
pub struct Row<'a> {
    pub name: &'a [u8],
    pub node: &'a TreeNode,
    pub detail: Detail,
}

pub struct Model {
    root: Root,
    /// Child indices from the root to the current folder.
    path: Vec<usize>,
    /// The current folder's entries (their indices), sorted.
    order: Vec<u32>,
    cursor: usize,
    /// First row shown.
    pub offset: usize,
    pub sort: SortKey,
    pub reversed: bool,
    pub apparent: bool,
    pub dialog: Option<Dialog>,
    /// Where the cursor was in each folder above, to come back to it.
    cursors: Vec<usize>,
}

impl Model {
    pub fn new(root: Root) -> Model {
        let mut model = Model {
            root,
            path: Vec::new(),
            order: Vec::new(),
            cursor: 0,
            offset: 0,
            sort: SortKey::Size,
            reversed: false,
            apparent: false,
            dialog: None,
            cursors: Vec::new(),
        };
        model.resort(None);
        model
    }

    /// Show apparent sizes (or disk usage), sorted again if by size.
    pub fn show_apparent(&mut self, apparent: bool) {
        if self.apparent != apparent {
            self.apparent = apparent;
            if self.sort == SortKey::Size {
                self.resort(self.order.get(self.cursor).copied());
            }
        }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The folder being looked at.
    pub fn current(&self) -> &TreeNode {
        let mut node = &self.root.node;
        for &i in &self.path {
            node = node.child(i).1;
        }
        node
    }

    /// The current folder's detail (its apparent size, its errors).
    pub fn current_detail(&self) -> Detail {
        match self.path.split_last() {
            None => self.root.detail,
            Some((&last, above)) => {
                let mut node = &self.root.node;
                for &i in above {
                    node = node.child(i).1;
                }
                node.child_detail(last)
            }
        }
    }

    /// The current folder's path, as scanned (the operand, then names).
    pub fn current_path(&self) -> Vec<u8> {
        let below = self.current_below();
        let mut path = self.root.name.to_vec();
        if !below.is_empty() {
            if !path.ends_with(b"/") {
                path.push(b'/');
            }
            path.extend_from_slice(&below);
        }
        path
    }

    /// The current folder's names below the operand, joined by `/`.
    fn current_below(&self) -> Vec<u8> {
        let mut below = Vec::new();
        let mut node = &self.root.node;
        for &i in &self.path {
            let (name, child) = node.child(i);
            if !below.is_empty() {
                below.push(b'/');
            }
            below.extend_from_slice(name);
            node = child;
        }
        below
    }

    pub fn depth(&self) -> usize {
        self.path.len()
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The `row`-th entry of the current folder, in the order shown.
    pub fn row(&self, row: usize) -> Row<'_> {
        let index = self.order[row] as usize;
        let folder = self.current();
        let (name, node) = folder.child(index);
        Row {
            name,
            node,
            detail: folder.child_detail(index),
        }
    }

    /// The size shown for an entry: disk usage, or apparent size.
    pub fn size_of(&self, node: &TreeNode, detail: Detail) -> u64 {
        if self.apparent {
            detail.apparent
        } else {
            node.amount
        }
    }

    /// Sort the current folder again, keeping the cursor on `keep` (an
    /// entry index) if given, else at the top.
    fn resort(&mut self, keep: Option<u32>) {
        let folder = self.current();
        let count = folder.children().len() as u32;
        let name = |i: u32| folder.child(i as usize).0;
        // Keys side by side with the indices, compared as plain tuples: on
        // a folder of 100,000 entries (examples/redraw.rs, 2026-11-26) a
        // sort by size took 17 ms when each comparison looked its entries
        // up, more than the 16 ms a keypress may take; now 3.1 ms.
        let key = |i: u32| -> u64 {
            let (_, node) = folder.child(i as usize);
            match self.sort {
                SortKey::Size if self.apparent => folder.child_detail(i as usize).apparent,
                SortKey::Size => node.amount,
                SortKey::Items => node.items(),
                SortKey::Mtime => folder.child_detail(i as usize).mtime as u64,
                SortKey::Name => 0,
            }
        };
        let (by_name, reversed) = (self.sort == SortKey::Name, self.reversed);
        // Largest (or newest) first: keys inverted, so that plain tuple
        // order (no closure per comparison) does the work.
        let mut keyed: Vec<(u64, u32)> = (0..count)
            .map(|i| (if reversed { key(i) } else { !key(i) }, i))
            .collect();
        if by_name {
            keyed.sort_unstable_by(|a, b| {
                let order = name(a.1).cmp(name(b.1));
                if reversed {
                    order.reverse()
                } else {
                    order
                }
            });
        } else {
            keyed.sort_unstable();
            // Equal keys: names from A.
            for run in keyed.chunk_by_mut(|a, b| a.0 == b.0).filter(|r| r.len() > 1) {
                run.sort_unstable_by(|a, b| name(a.1).cmp(name(b.1)));
            }
        }
        let order: Vec<u32> = keyed.into_iter().map(|(_, i)| i).collect();
        self.cursor = keep.and_then(|k| order.iter().position(|&i| i == k)).unwrap_or(0);
        self.order = order;
    }

    /// Keep the cursor in view of a screen of `height` rows.
    pub fn scroll_to_cursor(&mut self, height: usize) {
        let height = height.max(1);
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + height {
            self.offset = self.cursor + 1 - height;
        }
        self.offset = self.offset.min(self.order.len().saturating_sub(1));
    }

    fn move_cursor(&mut self, by: isize) {
        let last = self.order.len().saturating_sub(1) as isize;
        self.cursor = (self.cursor as isize + by).clamp(0, last) as usize;
    }

    /// One key; `page` is how many rows a screen shows.
    pub fn key(&mut self, key: Key, page: usize, actions: &mut dyn Actions) -> Outcome {
        if key == Key::Interrupt {
            return Outcome::Quit;
        }
        if let Some(dialog) = self.dialog.take() {
            if let (Dialog::ConfirmDelete { row }, Key::Char('y' | 'Y')) = (&dialog, key) {
                self.delete(*row, actions);
            }
            // Any other key closes the dialog (and a confirmation is a no).
            return Outcome::Continue;
        }
        let page = page.max(1) as isize;
        match key {
            Key::Up | Key::Char('k') => self.move_cursor(-1),
            Key::Down | Key::Char('j') => self.move_cursor(1),
            Key::PageUp => self.move_cursor(-page),
            Key::PageDown => self.move_cursor(page),
            Key::Home => self.cursor = 0,
            Key::End => self.move_cursor(isize::MAX / 2),
            Key::Open | Key::Char('l') => self.open(),
            Key::Back | Key::Char('h' | '<') => self.back(),
            Key::Char('s') => self.sort_by(SortKey::Size),
            Key::Char('n') => self.sort_by(SortKey::Name),
            Key::Char('C') => self.sort_by(SortKey::Items),
            Key::Char('M') => self.sort_by(SortKey::Mtime),
            Key::Char('a') => self.show_apparent(!self.apparent),
            Key::Char('d') if !self.order.is_empty() => {
                self.dialog = Some(Dialog::ConfirmDelete { row: self.cursor });
            }
            Key::Char('r') => self.rescan(actions),
            Key::Char('?') => self.dialog = Some(Dialog::Help),
            Key::Char('q') => return Outcome::Quit,
            _ => {}
        }
        Outcome::Continue
    }

    fn sort_by(&mut self, key: SortKey) {
        if self.sort == key {
            self.reversed = !self.reversed;
        } else {
            self.sort = key;
            self.reversed = false;
        }
        self.resort(self.order.get(self.cursor).copied());
    }

    fn open(&mut self) {
        let Some(&index) = self.order.get(self.cursor) else {
            return;
        };
        let (_, node) = self.current().child(index as usize);
        if !node.has_children() {
            return; // a file, or an empty or unreadable folder
        }
        self.path.push(index as usize);
        self.cursors.push(self.cursor);
        self.offset = 0;
        self.resort(None);
    }

    fn back(&mut self) {
        let Some(left) = self.path.pop() else { return };
        self.cursors.pop();
        self.offset = 0;
        self.resort(Some(left as u32));
    }

    /// Every folder above the current one moves by `change`, and so does
    /// the current folder's apparent size (kept in its parent); the
    /// current folder's own node is the caller's to change.
    fn apply_change(&mut self, change: Change) {
        self.root.detail.apparent = self.root.detail.apparent.saturating_add_signed(change.apparent);
        let mut node = &mut self.root.node;
        for &i in &self.path {
            node.adjust(i, change);
            node = node.child_mut(i);
        }
    }

    fn current_mut(&mut self) -> &mut TreeNode {
        let mut node = &mut self.root.node;
        for &i in &self.path {
            node = node.child_mut(i);
        }
        node
    }

    fn delete(&mut self, row: usize, actions: &mut dyn Actions) {
        let Some(&index) = self.order.get(row) else { return };
        let below = self.current_below();
        let name = self.current().child(index as usize).0.to_vec();
        match actions.delete(&self.root.name, &below, &name) {
            Ok(()) => {
                // The folder's own amount and count move in `remove_child`.
                let removed = self.current_mut().remove_child(index as usize);
                self.apply_change(Change::between(
                    (removed.amount, removed.apparent, removed.items),
                    (0, 0, 0),
                ));
                let keep = self.cursor.min(self.order.len().saturating_sub(2));
                self.resort(None);
                self.cursor = keep.min(self.order.len().saturating_sub(1));
            }
            Err(message) => {
                self.dialog = Some(Dialog::Message(message));
                self.rescan(actions);
            }
        }
    }

    fn rescan(&mut self, actions: &mut dyn Actions) {
        let path = self.current_path();
        let Some((node, detail)) = actions.rescan(&path) else {
            return;
        };
        let old = (
            self.current().amount,
            self.current_detail().apparent,
            self.current().items(),
        );
        let change = Change::between(old, (node.amount, detail.apparent, node.items()));
        let keep = self
            .order
            .get(self.cursor)
            .map(|&i| self.current().child(i as usize).0.to_vec());
        match self.path.split_last() {
            None => {
                self.root.node = node;
                self.root.detail = detail;
            }
            Some((&last, above)) => {
                let above = above.to_vec();
                self.apply_change(change);
                let mut parent = &mut self.root.node;
                for i in above {
                    parent = parent.child_mut(i);
                }
                parent.replace_child(last, node, detail);
            }
        }
        self.resort(None);
        if let Some(name) = keep {
            let folder = self.current();
            if let Some(row) = (0..self.order.len()).find(|&r| folder.child(self.order[r] as usize).0 == name) {
                self.cursor = row;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::TreeBuilder;

    fn file(kids: &mut TreeBuilder, name: &str, size: u64, mtime: i64) {
        kids.detailed_leaf(name.as_bytes(), size, Detail::new(size / 2, mtime, 0));
    }

    /// r/ { big/ { x 600, y 100 }, small 50, mid 300, empty/ }
    fn sample() -> Root {
        let mut big = TreeBuilder::default();
        file(&mut big, "x", 600, 5);
        file(&mut big, "y", 100, 6);
        let mut top = TreeBuilder::default();
        top.entry(b"big", 704, big, Some(Detail::new(4, 1, Detail::DIR)));
        file(&mut top, "small", 50, 9);
        file(&mut top, "mid", 300, 3);
        top.entry(
            b"empty",
            4,
            TreeBuilder::default(),
            Some(Detail::new(4, 2, Detail::DIR)),
        );
        let (node, detail) = top.into_detailed_node(1062, Detail::new(4, 0, Detail::DIR));
        let mut root = Root::new(b"r", node);
        root.detail = detail;
        root
    }

    #[derive(Default)]
    struct Fake {
        deleted: Vec<(String, String)>,
        fail: Option<String>,
        rescanned: Vec<String>,
        rescan_to: Option<(TreeNode, Detail)>,
    }

    impl Actions for Fake {
        fn delete(&mut self, root: &[u8], below: &[u8], name: &[u8]) -> Result<(), String> {
            let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            self.deleted.push((format!("{}|{}", s(root), s(below)), s(name)));
            self.fail.clone().map_or(Ok(()), Err)
        }
        fn rescan(&mut self, path: &[u8]) -> Option<(TreeNode, Detail)> {
            self.rescanned.push(String::from_utf8_lossy(path).into_owned());
            self.rescan_to.take()
        }
    }

    fn names(m: &Model) -> Vec<String> {
        (0..m.len())
            .map(|r| String::from_utf8_lossy(m.row(r).name).into_owned())
            .collect()
    }

    fn press(m: &mut Model, keys: &str, fake: &mut Fake) {
        for c in keys.chars() {
            let key = match c {
                '\n' => Key::Open,
                '\x08' => Key::Back,
                _ => Key::Char(c),
            };
            assert_eq!(m.key(key, 10, fake), Outcome::Continue);
        }
    }

    #[test]
    fn sorts_by_each_key_and_reverses_on_the_same_key() {
        let mut m = Model::new(sample());
        let fake = &mut Fake::default();
        assert_eq!(names(&m), ["big", "mid", "small", "empty"]);
        press(&mut m, "n", fake);
        assert_eq!(names(&m), ["big", "empty", "mid", "small"]);
        press(&mut m, "n", fake);
        assert_eq!(names(&m), ["small", "mid", "empty", "big"]);
        press(&mut m, "C", fake);
        assert_eq!(names(&m)[0], "big");
        press(&mut m, "M", fake);
        assert_eq!(names(&m), ["small", "mid", "empty", "big"]);
        press(&mut m, "sa", fake);
        // Apparent: big 4+300+50=354, mid 150, small 25, empty 4.
        assert_eq!(names(&m), ["big", "mid", "small", "empty"]);
        assert_eq!(m.size_of(m.row(0).node, m.row(0).detail), 354);
    }

    #[test]
    fn moves_opens_and_comes_back_to_the_same_row() {
        let mut m = Model::new(sample());
        let fake = &mut Fake::default();
        press(&mut m, "jk\n", fake);
        assert_eq!(m.current_path(), b"r/big");
        assert_eq!(names(&m), ["x", "y"]);
        press(&mut m, "j\n", fake); // a file does not open
        assert_eq!(m.depth(), 1);
        press(&mut m, "\x08", fake);
        assert_eq!((m.depth(), m.cursor()), (0, 0));
        press(&mut m, "jjj\n", fake); // an empty folder does not open either
        assert_eq!(m.depth(), 0);
        assert_eq!(m.key(Key::Char('q'), 10, fake), Outcome::Quit);
        assert_eq!(m.key(Key::Interrupt, 10, fake), Outcome::Quit);
    }

    #[test]
    fn delete_asks_first_and_a_no_keeps_everything() {
        let mut m = Model::new(sample());
        let fake = &mut Fake::default();
        press(&mut m, "d", fake);
        assert_eq!(m.dialog, Some(Dialog::ConfirmDelete { row: 0 }));
        press(&mut m, "n", fake);
        assert_eq!(m.dialog, None);
        assert!(fake.deleted.is_empty());
        assert_eq!(names(&m), ["big", "mid", "small", "empty"]);
    }

    #[test]
    fn a_deletion_takes_the_entry_out_and_its_size_off_every_level_above() {
        let mut m = Model::new(sample());
        let fake = &mut Fake::default();
        press(&mut m, "\ndy", fake); // in big: delete x (600, apparent 300)
        assert_eq!(fake.deleted, [("r|big".to_string(), "x".to_string())]);
        assert_eq!(names(&m), ["y"]);
        assert_eq!(m.current().amount, 104);
        assert_eq!(m.current().items(), 1);
        assert_eq!(m.current_detail().apparent, 54);
        press(&mut m, "\x08", fake);
        assert_eq!(m.root().node.amount, 462);
        assert_eq!(m.root().node.items(), 5);
        assert_eq!(m.root().detail.apparent, 4 + 54 + 25 + 150 + 4);
        assert_eq!(m.row(0).node.amount, 300, "big (104) is now below mid (300)");
    }

    #[test]
    fn a_failed_deletion_says_why_and_rescans_the_folder() {
        let mut m = Model::new(sample());
        let mut fake = Fake {
            fail: Some("cannot remove 'r/big/x': Permission denied".into()),
            ..Fake::default()
        };
        let mut kids = TreeBuilder::default();
        file(&mut kids, "x", 600, 5);
        let (node, detail) = kids.into_detailed_node(604, Detail::new(4, 1, Detail::DIR));
        fake.rescan_to = Some((node, detail));
        press(&mut m, "\ndy", &mut fake);
        assert_eq!(fake.rescanned, ["r/big"]);
        assert!(matches!(m.dialog, Some(Dialog::Message(ref t)) if t.contains("Permission denied")));
        assert_eq!(names(&m), ["x"]);
        assert_eq!(m.current().amount, 604);
        assert_eq!(m.root().node.amount, 1062 - 100);
        assert_eq!(m.root().node.items(), 5);
        assert_eq!(m.root().detail.apparent, 4 + 304 + 25 + 150 + 4);
    }

    #[test]
    fn rescan_of_the_top_replaces_the_whole_tree() {
        let mut m = Model::new(sample());
        let mut kids = TreeBuilder::default();
        file(&mut kids, "new", 10, 1);
        let (node, detail) = kids.into_detailed_node(14, Detail::new(4, 0, Detail::DIR));
        let mut fake = Fake {
            rescan_to: Some((node, detail)),
            ..Fake::default()
        };
        press(&mut m, "r", &mut fake);
        assert_eq!(fake.rescanned, ["r"]);
        assert_eq!(names(&m), ["new"]);
        assert_eq!(m.root().node.amount, 14);
        assert_eq!(m.root().detail.apparent, 9);
    }

    #[test]
    fn deleting_a_link_counted_elsewhere_moves_no_total() {
        let mut kids = TreeBuilder::default();
        file(&mut kids, "counted", 100, 1);
        kids.detailed_leaf(b"link", 100, Detail::new(50, 1, Detail::UNCOUNTED_LINK));
        let (node, detail) = kids.into_detailed_node(104, Detail::new(4, 0, Detail::DIR));
        assert_eq!(detail.apparent, 54, "the link's size is not added up");
        let mut root = Root::new(b"r", node);
        root.detail = detail;
        let mut m = Model::new(root);
        let fake = &mut Fake::default();
        press(&mut m, "ndy", fake); // by name: "counted" first
        assert_eq!(fake.deleted[0].1, "counted");
        press(&mut m, "dy", fake);
        assert_eq!(fake.deleted[1].1, "link");
        assert_eq!(m.root().node.amount, 4);
        assert_eq!(m.root().detail.apparent, 4);
    }

    #[test]
    fn scrolling_keeps_the_cursor_on_screen() {
        let mut m = Model::new(sample());
        let fake = &mut Fake::default();
        press(&mut m, "jjj", fake);
        m.scroll_to_cursor(2);
        assert_eq!(m.offset, 2);
        press(&mut m, "kkk", fake);
        m.scroll_to_cursor(2);
        assert_eq!(m.offset, 0);
        assert_eq!(m.key(Key::End, 2, fake), Outcome::Continue);
        assert_eq!(m.cursor(), 3);
    }
}
