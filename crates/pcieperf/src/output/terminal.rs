//! A full-screen terminal view on ratatui and crossterm: raw keys without echo, resize events,
//! the alternate screen, colours unless `NO_COLOR` says otherwise, and everything put back when
//! the view is dropped (also on an error or a panic).

use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::prelude::{CrosstermBackend, Terminal};
use ratatui::Frame;
use std::io::{IsTerminal, Stdout};
use std::time::Duration;

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// False when the `NO_COLOR` convention (no-color.org) asks for no colours: set and not empty.
pub fn colours() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The terminal on the alternate screen, keys in raw mode when stdin is a terminal, until dropped.
pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    /// Keys come from stdin only when it is a terminal (in raw mode while the screen lives).
    keys: bool,
}

impl Screen {
    /// Raw keys on stdin (no echo, no line buffering, Ctrl-C as a key), the alternate screen and
    /// a hidden cursor on stdout.
    pub fn enter() -> std::io::Result<Screen> {
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        let keys = std::io::stdin().is_terminal();
        if keys {
            terminal::enable_raw_mode()?;
        }
        // From here on, dropping the screen puts the terminal back.
        let mut screen = Screen { terminal, keys };
        execute!(
            screen.terminal.backend_mut(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )?;
        Ok(screen)
    }

    /// Draw a frame (ratatui sends only the cells that changed, at the terminal's current size).
    pub fn draw(&mut self, view: impl FnOnce(&mut Frame)) -> std::io::Result<()> {
        self.terminal.draw(view).map(|_| ())
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
        // The cursor first, so that ratatui's own drop has nothing left to show after we leave.
        let _ = self.terminal.show_cursor();
        let _ = execute!(self.terminal.backend_mut(), terminal::LeaveAlternateScreen);
        if self.keys {
            let _ = terminal::disable_raw_mode();
        }
    }
}
