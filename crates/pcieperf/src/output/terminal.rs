//! A full-screen terminal view with raw termios and ANSI escapes: keys one at a time without
//! echo, the alternate screen, and everything put back when the view is dropped (also on an
//! error or a panic).

use std::io::{IsTerminal, Write};

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Columns and rows of the terminal on stdout (80 × 24 when it does not say).
pub fn size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ writes a `winsize` into the struct we pass.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 && ws.ws_row > 0 {
        (ws.ws_col as usize, ws.ws_row as usize)
    } else {
        (80, 24)
    }
}

/// The terminal in raw mode on the alternate screen until dropped.
pub struct Screen {
    /// stdin's settings before, when stdin is a terminal (keys are read from it).
    saved: Option<libc::termios>,
}

impl Screen {
    /// Raw, non-blocking keys on stdin (no echo, no line buffering, Ctrl-C as a key), the
    /// alternate screen and a hidden cursor on stdout.
    pub fn enter() -> std::io::Result<Screen> {
        let saved = if std::io::stdin().is_terminal() {
            // SAFETY: tcgetattr fills the termios we pass; we only use it when it succeeds.
            let mut t: libc::termios = unsafe { std::mem::zeroed() };
            if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut t) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut raw = t;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            raw.c_iflag &= !(libc::IXON | libc::ICRNL);
            raw.c_cc[libc::VMIN] = 0;
            raw.c_cc[libc::VTIME] = 0;
            // SAFETY: a termios derived from the one the terminal gave us.
            if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Some(t)
        } else {
            None
        };
        let screen = Screen { saved };
        let mut out = std::io::stdout();
        out.write_all(b"\x1b[?1049h\x1b[?25l")?;
        out.flush()?;
        Ok(screen)
    }

    /// Keys typed since the last call (never waits).
    pub fn keys(&self) -> Vec<u8> {
        if self.saved.is_none() {
            return Vec::new();
        }
        let mut buf = [0u8; 64];
        // SAFETY: VMIN = VTIME = 0 makes this read return at once; it writes at most buf.len() bytes.
        let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        buf[..n.max(0) as usize].to_vec()
    }

    /// Replace what is shown with `text` (lines separated by `\n`).
    pub fn draw(&self, text: &str) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(b"\x1b[H\x1b[2J")?;
        out.write_all(text.replace('\n', "\r\n").as_bytes())?;
        out.flush()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l").and_then(|_| out.flush());
        if let Some(t) = &self.saved {
            // SAFETY: restores the settings read in `enter`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t) };
        }
    }
}
