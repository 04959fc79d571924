//! A full-screen terminal view on crossterm: raw keys without echo, resize events, the
//! alternate screen, colours unless `NO_COLOR` says otherwise, only the lines that changed sent
//! at each draw, and everything put back when the view is dropped (also on an error or a panic).
//!
//! A frame is a list of lines of styled text, one per row, clipped to the terminal's width by
//! characters: what is drawn here (tables of ASCII names and numbers, bar and arrow signs) takes
//! one column per character.

use crossterm::event::{self, Event};
use crossterm::style::{Attribute, Color, Print, SetAttribute, SetForegroundColor};
use crossterm::terminal::{self, Clear, ClearType};
use crossterm::{cursor, execute, queue};
use std::io::{IsTerminal, Stdout, Write};
use std::time::Duration;

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// False when the `NO_COLOR` convention (no-color.org) asks for no colours: set and not empty.
pub fn colours() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// How a span of text looks: a colour, bold, reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub fg: Option<Color>,
    pub bold: bool,
    pub reversed: bool,
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn styled(text: impl Into<String>, style: Style) -> Span {
        Span {
            text: text.into(),
            style,
        }
    }
}

/// One row of the screen.
pub type Line = Vec<Span>;

/// A frame as drawn: its size (columns, rows) and its rows, each clipped to the width.
#[derive(Debug, Default, PartialEq)]
struct Frame {
    size: (u16, u16),
    rows: Vec<Line>,
}

impl Frame {
    /// `lines` at `size`: the first rows of the screen, cut to its width; rows past the last
    /// line are blank, lines past the last row are left out.
    fn new(size: (u16, u16), lines: Vec<Line>) -> Frame {
        let (width, height) = (usize::from(size.0), usize::from(size.1));
        let mut rows: Vec<Line> = lines.into_iter().take(height).map(|l| clip(l, width)).collect();
        rows.resize(height, Line::new());
        Frame { size, rows }
    }
}

/// The spans of `line` that fit in `width` columns, the last one cut where the width ends.
fn clip(line: Line, width: usize) -> Line {
    let mut left = width;
    let mut out = Line::new();
    for mut span in line {
        let n = span.text.chars().count();
        if n > left {
            span.text = span.text.chars().take(left).collect();
        }
        left -= n.min(left);
        if !span.text.is_empty() {
            out.push(span);
        }
    }
    out
}

/// Sends to `out` what turns the screen showing `old` into `new`: after a resize, the screen
/// cleared and every row that is not blank; else only the rows that changed.
fn render(old: &Frame, new: &Frame, out: &mut impl Write) -> std::io::Result<()> {
    let resized = old.size != new.size;
    if resized {
        queue!(out, Clear(ClearType::All))?;
    }
    for (y, row) in new.rows.iter().enumerate() {
        let shown = if resized { Some(&Line::new()) } else { old.rows.get(y) };
        if shown == Some(row) {
            continue;
        }
        queue!(out, cursor::MoveTo(0, y as u16))?;
        let mut used = 0;
        for span in row {
            let s = span.style;
            if s.bold {
                queue!(out, SetAttribute(Attribute::Bold))?;
            }
            if s.reversed {
                queue!(out, SetAttribute(Attribute::Reverse))?;
            }
            if let Some(c) = s.fg {
                queue!(out, SetForegroundColor(c))?;
            }
            queue!(out, Print(&span.text))?;
            if s != Style::default() {
                queue!(out, SetAttribute(Attribute::Reset))?;
            }
            used += span.text.chars().count();
        }
        // A full row leaves the cursor in the last column, where clearing would erase its
        // last character.
        if used < usize::from(new.size.0) {
            queue!(out, Clear(ClearType::UntilNewLine))?;
        }
    }
    out.flush()
}

/// The terminal on the alternate screen, keys in raw mode when stdin is a terminal, until dropped.
pub struct Screen {
    out: Stdout,
    /// What the screen shows now (empty before the first draw: everything is sent then).
    shown: Frame,
    /// Keys come from stdin only when it is a terminal (in raw mode while the screen lives).
    keys: bool,
}

impl Screen {
    /// Raw keys on stdin (no echo, no line buffering, Ctrl-C as a key), the alternate screen and
    /// a hidden cursor on stdout.
    pub fn enter() -> std::io::Result<Screen> {
        let keys = std::io::stdin().is_terminal();
        if keys {
            terminal::enable_raw_mode()?;
        }
        // From here on, dropping the screen puts the terminal back.
        let mut screen = Screen {
            out: std::io::stdout(),
            shown: Frame::default(),
            keys,
        };
        execute!(screen.out, terminal::EnterAlternateScreen, cursor::Hide)?;
        Ok(screen)
    }

    /// Draw the lines `view` gives for the terminal's current size (columns, rows).
    pub fn draw(&mut self, view: impl FnOnce(u16, u16) -> Vec<Line>) -> std::io::Result<()> {
        let size = terminal::size()?;
        let frame = Frame::new(size, view(size.0, size.1));
        render(&self.shown, &frame, &mut self.out)?;
        self.shown = frame;
        Ok(())
    }

    /// Keys and resizes since the last call (never waits; none when stdin is not a terminal).
    pub fn events(&self) -> std::io::Result<Vec<Event>> {
        let mut events = Vec::new();
        while self.keys && event::poll(Duration::ZERO)? {
            events.push(event::read()?);
        }
        Ok(events)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(self.out, cursor::Show, terminal::LeaveAlternateScreen);
        if self.keys {
            let _ = terminal::disable_raw_mode();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Line {
        vec![Span::styled(text, Style::default())]
    }

    fn sent(old: &Frame, new: &Frame) -> String {
        let mut out = Vec::new();
        render(old, new, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_are_clipped_to_the_width_and_padded_to_the_height() {
        let bold = Style {
            bold: true,
            ..Style::default()
        };
        let line = vec![Span::styled("ab", bold), Span::styled("▁▂▃▄", Style::default())];
        let f = Frame::new((4, 3), vec![line, plain("x"), plain("y"), plain("z")]);
        assert_eq!(f.rows.len(), 3);
        assert_eq!(
            f.rows[0],
            vec![Span::styled("ab", bold), Span::styled("▁▂", Style::default())]
        );
        assert_eq!(f.rows[2], plain("y"));
        let short = Frame::new((4, 3), vec![plain("x")]);
        assert_eq!(short.rows[1..], [Line::new(), Line::new()]);
        assert!(Frame::new((0, 2), vec![plain("x")]).rows.iter().all(|r| r.is_empty()));
    }

    #[test]
    fn only_changed_rows_are_sent_and_a_resize_sends_all() {
        let a = Frame::new((10, 3), vec![plain("one"), plain("two"), plain("three")]);
        let b = Frame::new((10, 3), vec![plain("one"), plain("2"), plain("three")]);
        let first = sent(&Frame::default(), &a);
        assert!(first.contains("one") && first.contains("two") && first.contains("three"));
        assert_eq!(sent(&a, &a), "");
        let changed = sent(&a, &b);
        assert!(changed.contains('2') && !changed.contains("one") && !changed.contains("three"));
        // Row 1 only: the cursor moves there (CSI row;col H, 1-based).
        assert!(changed.starts_with("\x1b[2;1H"), "{changed:?}");
        let wider = Frame::new((12, 3), vec![plain("one"), plain("2"), plain("three")]);
        let all = sent(&b, &wider);
        assert!(all.starts_with("\x1b[2J") && all.contains("one") && all.contains("three"));
        // After a clear, blank rows are left alone; a row that becomes blank is cleared.
        let gap = Frame::new((12, 3), vec![plain("one"), Line::new(), plain("three")]);
        assert!(!sent(&Frame::default(), &gap).contains("\x1b[2;1H"));
        assert_eq!(sent(&wider, &gap), "\x1b[2;1H\x1b[K");
    }

    #[test]
    fn styles_are_set_and_reset_and_full_rows_are_not_cleared() {
        let cyan = Style {
            fg: Some(Color::Cyan),
            bold: true,
            reversed: false,
        };
        let f = Frame::new((4, 1), vec![vec![Span::styled("abcd", cyan)]]);
        let s = sent(&Frame::default(), &f);
        assert!(
            s.contains("\x1b[1m") && s.contains("\x1b[0m") && s.contains("abcd"),
            "{s:?}"
        );
        assert!(!s.ends_with("\x1b[K"), "{s:?}");
        let g = Frame::new((4, 1), vec![plain("ab")]);
        assert!(sent(&f, &g).ends_with("ab\x1b[K"));
    }
}
