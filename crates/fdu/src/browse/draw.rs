//! How the browser looks: a title line, the folder's path, one line per
//! entry (size, share of the folder with a bar, entries below, name), a
//! status line with the totals, and a window for help or a confirmation.
//! Only the rows on screen are drawn, so a keypress costs the same in a
//! folder of ten entries or of a million.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::model::{Dialog, Model, SortKey};
use crate::tree::Detail;

/// Width of the share bar, between brackets.
const BAR: usize = 10;

/// Sizes as ncdu shows them: one decimal, binary units.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1023.95 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A name as it can be shown: invalid UTF-8 replaced, control characters
/// (which would move the cursor or recolour the screen) as `?`.
pub fn printable(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Rows of entries a screen of this size shows.
pub fn page_height(area: Rect) -> usize {
    area.height.saturating_sub(3) as usize
}

/// Draw the whole screen.
pub fn render(model: &mut Model, frame: &mut Frame<'_>) {
    let area = frame.area();
    let [title, path, list, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    let reverse = Style::default().add_modifier(Modifier::REVERSED);
    frame.render_widget(
        Paragraph::new(" fdu -i  ~  arrows or hjkl to move, d to delete, ? for help, q to quit").style(reverse),
        title,
    );
    let folder = model.current();
    frame.render_widget(
        Paragraph::new(format!(
            "--- {}  ({}, {} entries below) ",
            printable(&model.current_path()),
            human(model.size_of(folder, model.current_detail())),
            folder.items()
        )),
        path,
    );
    model.scroll_to_cursor(list.height as usize);
    let mut lines = rows(model, list);
    if model.is_empty() {
        lines.push(Line::from("    (empty folder)"));
    }
    frame.render_widget(Paragraph::new(lines), list);
    frame.render_widget(Paragraph::new(status_line(model)).style(reverse), status);
    if let Some(dialog) = &model.dialog {
        draw_dialog(model, dialog, area, frame);
    }
}

fn rows(model: &Model, area: Rect) -> Vec<Line<'static>> {
    let folder_total = model.size_of(model.current(), model.current_detail()).max(1);
    let end = (model.offset + area.height as usize).min(model.len());
    let show_items = model.sort == SortKey::Items;
    let show_mtime = model.sort == SortKey::Mtime;
    (model.offset..end)
        .map(|r| {
            let row = model.row(r);
            let size = model.size_of(row.node, row.detail);
            // A link counted elsewhere takes no share of the folder.
            let share = if row.detail.counts() {
                size as f64 / folder_total as f64
            } else {
                0.0
            };
            let filled = ((share * BAR as f64).round() as usize).min(BAR);
            let mark = if row.detail.flags & Detail::READ_ERROR != 0 {
                '!'
            } else if row.detail.has_error() {
                '.'
            } else if !row.detail.counts() {
                'H'
            } else {
                ' '
            };
            let mut text = format!(
                "{mark}{:>10} {:>5.1}% [{}{}] ",
                human(size),
                share * 100.0,
                "#".repeat(filled),
                " ".repeat(BAR - filled)
            );
            if show_items {
                text.push_str(&format!("{:>8} ", row.node.items()));
            }
            if show_mtime {
                text.push_str(&format!("{} ", date(row.detail.mtime)));
            }
            text.push_str(&printable(row.name));
            if row.detail.is_dir() {
                text.push('/');
            }
            let style = if r == model.cursor() {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            Line::from(Span::styled(text, style))
        })
        .collect()
}

fn date(mtime: u32) -> String {
    jiff::Timestamp::from_second(mtime as i64)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| "????-??-?? ??:??".into())
}

fn status_line(model: &Model) -> String {
    let root = model.root();
    let sort = match model.sort {
        SortKey::Size => "size",
        SortKey::Name => "name",
        SortKey::Items => "items",
        SortKey::Mtime => "mtime",
    };
    format!(
        " Total disk usage: {}  Apparent size: {}  Items: {}  Sorted by {sort}{}{}",
        human(root.node.amount),
        human(root.detail.apparent),
        root.node.items() + 1,
        if model.reversed { " (reversed)" } else { "" },
        if model.apparent { "  [apparent sizes]" } else { "" },
    )
}

const HELP: &str = "\
up, k / down, j    move the cursor
right, l, Enter    open the folder
left, h, Backspace go to the parent folder
s / n / C / M      sort by size / name / items / mtime (again: reverse)
a                  show apparent sizes / disk usage
d                  delete the entry (asks first)
r                  rescan this folder
?                  this help
q, Ctrl-C          quit

! an unreadable folder   . an error below it
H another link of a file counted elsewhere (not in the totals)";

fn draw_dialog(model: &Model, dialog: &Dialog, area: Rect, frame: &mut Frame<'_>) {
    let (title, text) = match dialog {
        Dialog::Help => ("Keys", HELP.to_string()),
        Dialog::Message(message) => ("Note", format!("{message}\n\nPress any key.")),
        Dialog::ConfirmDelete { row } => {
            let entry = model.row(*row);
            let what = if entry.detail.is_dir() { "folder" } else { "file" };
            let mut text = format!(
                "Delete the {what} {}\n({} on disk, {} apparent",
                printable(entry.name),
                human(entry.node.amount),
                human(entry.detail.apparent)
            );
            if entry.detail.is_dir() {
                text.push_str(&format!(", {} entries inside", entry.node.items()));
            }
            text.push_str(")?\n\ny: delete   any other key: keep");
            ("Confirm", text)
        }
    };
    let lines = text.lines().count() as u16 + 2;
    let width = area.width.saturating_sub(4).min(76);
    let height = lines.min(area.height);
    let x = area.x + (area.width - width) / 2;
    let y = area.y + (area.height - height) / 2;
    let window = Rect::new(x, y, width, height);
    frame.render_widget(Clear, window);
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(title)),
        window,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::browse::model::{Actions, Key};
    use crate::tree::{Root, TreeBuilder, TreeNode};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    struct Keep;
    impl Actions for Keep {
        fn delete(&mut self, _: &[u8], _: &[u8], _: &[u8]) -> Result<(), String> {
            Ok(())
        }
        fn rescan(&mut self, _: &[u8]) -> Option<(TreeNode, Detail)> {
            None
        }
    }

    fn model(files: usize) -> Model {
        let mut sub = TreeBuilder::default();
        sub.detailed_leaf(b"inner", 4096, Detail::new(10, 0, 0));
        let mut top = TreeBuilder::default();
        top.entry(b"docs", 8192, sub, Some(Detail::new(4096, 0, Detail::DIR)));
        top.detailed_leaf(b"locked", 4096, Detail::new(4096, 0, Detail::DIR | Detail::READ_ERROR));
        for i in 0..files {
            top.detailed_leaf(format!("f{i:06}").as_bytes(), 1024, Detail::new(1000, 0, 0));
        }
        top.detailed_leaf(b"bad\x1b[2Jname\xff", 2048, Detail::new(1, 0, 0));
        let amount = 4096 + 8192 + 4096 + 1024 * files as u64 + 2048;
        let (node, detail) = top.into_detailed_node(amount, Detail::new(4096, 0, Detail::DIR));
        let mut root = Root::new(b"/data", node);
        root.detail = detail;
        Model::new(root)
    }

    fn screen(model: &mut Model, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| render(model, f)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    #[test]
    fn sizes_read_as_ncdu_shows_them() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1024), "1.0 KiB");
        assert_eq!(human(1536 * 1024 * 1024), "1.5 GiB");
        assert_eq!(human(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn a_folder_shows_sizes_shares_bars_marks_and_totals() {
        let mut m = model(0);
        let lines = screen(&mut m, 80, 10);
        assert!(lines[0].contains("fdu -i"), "{lines:#?}");
        assert_eq!(lines[1], "--- /data  (18.0 KiB, 4 entries below)");
        assert_eq!(lines[2], "    8.0 KiB  44.4% [####      ] docs/");
        assert_eq!(lines[3], "!   4.0 KiB  22.2% [##        ] locked/");
        assert_eq!(lines[4], "    2.0 KiB  11.1% [#         ] bad?[2Jname\u{fffd}");
        assert!(lines[9].contains("Total disk usage: 18.0 KiB"), "{lines:#?}");
        assert!(lines[9].contains("Items: 5"), "{lines:#?}");
    }

    #[test]
    fn a_resize_redraws_at_the_new_size_and_keeps_the_cursor_on_screen() {
        let mut m = model(100);
        for _ in 0..50 {
            m.key(Key::Down, 10, &mut Keep);
        }
        let small = screen(&mut m, 60, 8);
        assert_eq!(small.len(), 8);
        assert!(small[2..7].iter().any(|l| l.contains("f000047")), "{small:#?}");
        let big = screen(&mut m, 100, 30);
        assert!(big.iter().any(|l| l.contains("f000047")));
    }

    #[test]
    fn a_confirmation_names_what_and_how_much() {
        let mut m = model(0);
        m.key(Key::Char('d'), 10, &mut Keep);
        let lines = screen(&mut m, 80, 14).join("\n");
        assert!(lines.contains("Delete the folder docs"), "{lines}");
        assert!(
            lines.contains("8.0 KiB on disk, 4.0 KiB apparent, 1 entries inside"),
            "{lines}"
        );
        m.key(Key::Char('?'), 10, &mut Keep); // closes the confirmation: a no
        m.key(Key::Char('?'), 10, &mut Keep);
        let lines = screen(&mut m, 80, 20).join("\n");
        assert!(lines.contains("rescan this folder"), "{lines}");
    }

    #[test]
    fn a_keypress_draws_only_the_rows_on_screen() {
        let mut m = model(100_000);
        let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
        for key in [Key::Down, Key::End, Key::Home, Key::PageDown] {
            m.key(key, 37, &mut Keep);
            terminal.draw(|f| render(&mut m, f)).unwrap();
        }
        let buffer = terminal.backend().buffer();
        let cursor_row: String = (0..100).map(|x| buffer[(x, 2 + 37 - 1)].symbol().to_string()).collect();
        assert!(cursor_row.contains('f'), "{cursor_row}");
    }
}
