//! `pcieperf pmu top`: a live view per root port (Rx/Tx Gb/s, share of the link's model
//! bandwidth, a sparkline of recent intervals) drawn on the terminal, redrawn on resize, sortable
//! with keys or `--sort` (a help line names the keys); `q` or Ctrl-C quits and puts the terminal
//! back. With `--format csv|json` it prints the same rows every
//! interval instead (no terminal needed).

use super::live_options::{check_duration, usage, WatchArgs};
use super::rows::strip_header;
use crate::error::CliError;
use crate::output::terminal::{self, Line, Screen, Span, Style};
use crate::output::{Cell, Format, Table};
use crate::signals::cancel_on_signals;
use clap::{Args, ValueEnum};
use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::style::Color;
use pcie_pmu::monitor::{self, add_interval, Monitor, Row, Schedule, Sink, Target, Trend};
use serde::Serialize;
use std::cmp::Ordering;
use std::io::Write;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TopArgs {
    #[command(flatten)]
    watch: WatchArgs,
    /// Sort column (keys in the view: n r t a c; i reverses)
    #[arg(long, value_enum, default_value_t)]
    sort: SortKey,
    /// Stop after S seconds (default: until q or Ctrl-C)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    duration: Option<f64>,
    /// table: the live view (stdout must be a terminal); csv / json: the rows every interval
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
enum SortKey {
    /// Root port (or event) name, ascending
    Name,
    Rx,
    Tx,
    /// Rx + Tx
    #[default]
    Total,
    /// Count rate of events that do not measure payload
    Rate,
}

impl SortKey {
    fn from_key(k: char) -> Option<SortKey> {
        Some(match k {
            'n' => SortKey::Name,
            'r' => SortKey::Rx,
            't' => SortKey::Tx,
            'a' => SortKey::Total,
            'c' => SortKey::Rate,
            _ => return None,
        })
    }

    fn value(self, t: &Target) -> f64 {
        match self {
            SortKey::Name => 0.0,
            SortKey::Rx => t.rx_gbps.unwrap_or(-1.0),
            SortKey::Tx => t.tx_gbps.unwrap_or(-1.0),
            SortKey::Total => match (t.rx_gbps, t.tx_gbps) {
                (None, None) => -1.0,
                (r, x) => r.unwrap_or(0.0) + x.unwrap_or(0.0),
            },
            SortKey::Rate => t.rate.unwrap_or(-1.0),
        }
    }
}

/// Order of two targets: names ascending, numbers descending; `reverse` flips either.
fn compare(a: &Target, b: &Target, key: SortKey, reverse: bool) -> Ordering {
    let o = match key {
        SortKey::Name => a.name.cmp(&b.name),
        _ => key.value(b).total_cmp(&key.value(a)).then_with(|| a.name.cmp(&b.name)),
    };
    if reverse {
        o.reverse()
    } else {
        o
    }
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The values as bars scaled to their maximum (the lowest bar for zero).
pub fn sparkline(values: impl Iterator<Item = f64> + Clone) -> String {
    let max = values.clone().fold(0.0_f64, f64::max);
    values
        .map(|v| {
            let i = if max > 0.0 { (v / max * 7.0).round() as usize } else { 0 };
            BARS[i.min(7)]
        })
        .collect()
}

/// The live view: the terminal and what it shows.
struct View {
    screen: Screen,
    board: Board,
}

/// What the live view shows: each target's recent intervals, in the order the keys chose.
struct Board {
    trends: Vec<Trend>,
    key: SortKey,
    reverse: bool,
    time_s: f64,
    interval_ms: u64,
    colours: bool,
}

const HISTORY: usize = 60;

/// The last line of the view: what each key does.
const HELP: &str = " n name  r Rx  t Tx  a total  c rate  i reverse  q quit ";

impl Board {
    /// The lines above the help line: a title, the table and each row's sparkline, clipped to
    /// `height` lines (the terminal clips them to its width).
    fn lines(&self, width: usize, height: usize) -> Vec<Line> {
        let mut trends: Vec<&Trend> = self.trends.iter().collect();
        trends.sort_by(|a, b| compare(&a.last, &b.last, self.key, self.reverse));
        let arrow = if self.reverse { '▲' } else { '▼' };
        let head = |k: SortKey, s: &str| {
            if k == self.key {
                format!("{s}{arrow}")
            } else {
                s.to_string()
            }
        };
        let mut t = Table::new(&[
            ("target", &head(SortKey::Name, "Root port / event")),
            ("pmus", "PMU"),
            ("link", "Link"),
            ("rx", &head(SortKey::Rx, "Rx Gb/s")),
            ("rx_pct", "Rx %"),
            ("tx", &head(SortKey::Tx, "Tx Gb/s")),
            ("tx_pct", "Tx %"),
            ("total", &head(SortKey::Total, "Total")),
            ("rate", &head(SortKey::Rate, "Rate/s")),
            ("run", "Run %"),
        ]);
        for tr in &trends {
            t.push(target_cells(&tr.last, SortKey::Total.value(&tr.last)));
        }
        let table = t.to_human();
        let table_w = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        let spark_w = width.saturating_sub(table_w + 2).min(HISTORY);
        let title = format!(
            "pcieperf pmu top  {} targets  every {} ms  {:.1} s   sort: {:?}{arrow}",
            trends.len(),
            self.interval_ms,
            self.time_s,
            self.key
        );
        let mut out = vec![vec![Span::styled(title, self.style(Color::Cyan))], Line::new()];
        for (i, l) in table.lines().enumerate().take(height.saturating_sub(2)) {
            let (spark, style) = match i.checked_sub(1).and_then(|j| trends.get(j)) {
                Some(tr) if spark_w > 0 => {
                    let h = &tr.history;
                    let s = sparkline(h.iter().skip(h.len().saturating_sub(spark_w)).copied());
                    (
                        s,
                        Style {
                            bold: false,
                            ..self.style(Color::Green)
                        },
                    )
                }
                _ if i == 0 && spark_w > 0 => ("History".to_string(), self.style(Color::Yellow)),
                _ => (String::new(), Style::default()),
            };
            let row = format!("{l:<table_w$}  ");
            let row_style = if i == 0 {
                self.style(Color::Yellow)
            } else {
                Style::default()
            };
            out.push(vec![Span::styled(row, row_style), Span::styled(spark, style)]);
        }
        out
    }

    /// Bold text in `colour`, or just bold under `NO_COLOR`.
    fn style(&self, colour: Color) -> Style {
        Style {
            fg: self.colours.then_some(colour),
            bold: true,
            reversed: false,
        }
    }
}

impl View {
    fn redraw(&mut self) -> Result<(), CliError> {
        let board = &self.board;
        self.screen
            .draw(|width, height| {
                // The table on every row but the last, the help line on the last.
                let body = height.saturating_sub(1).into();
                let mut lines = board.lines(width.into(), body);
                lines.resize(body, Line::new());
                if height > 0 {
                    let reversed = Style {
                        reversed: true,
                        ..Style::default()
                    };
                    lines.push(vec![Span::styled(HELP, reversed)]);
                }
                lines
            })
            .map_err(|e| CliError::Runtime(format!("cannot draw: {e}")))
    }
}

fn target_cells(t: &Target, total: f64) -> Vec<Cell> {
    let opt = |x: Option<f64>, dec: usize| x.map_or(Cell::Empty, |v| Cell::num(v, dec));
    vec![
        Cell::text(t.name.as_str()),
        Cell::text(t.pmus.as_str()),
        t.link.as_deref().map_or(Cell::Empty, Cell::text),
        opt(t.rx_gbps, 2),
        opt(t.rx_pct, 1),
        opt(t.tx_gbps, 2),
        opt(t.tx_pct, 1),
        opt((total >= 0.0).then_some(total), 2),
        opt(t.rate, 0),
        Cell::num(t.running_pct, 1),
    ]
}

impl Sink for View {
    type Error = CliError;
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        let b = &mut self.board;
        b.time_s = rows.first().map_or(b.time_s, |r| r.time_s);
        add_interval(&mut b.trends, mon.targets(rows), HISTORY);
        self.redraw()?;
        Ok(true)
    }

    /// Keys re-sort or quit; a resize redraws at the new size.
    fn wake(&mut self, _mon: &Monitor) -> Result<bool, CliError> {
        let events = self
            .screen
            .events()
            .map_err(|e| CliError::Runtime(format!("cannot read the terminal: {e}")))?;
        let mut changed = false;
        for ev in events {
            match ev {
                Event::Key(k) if k.kind == KeyEventKind::Press => match k.code {
                    KeyCode::Char('q' | 'Q') => return Ok(false),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => return Ok(false),
                    KeyCode::Char('i') => self.board.reverse = !self.board.reverse,
                    KeyCode::Char(c) => match SortKey::from_key(c) {
                        Some(s) => self.board.key = s,
                        None => continue,
                    },
                    _ => continue,
                },
                Event::Resize(..) => {}
                _ => continue,
            }
            changed = true;
        }
        if changed {
            self.redraw()?;
        }
        Ok(true)
    }

    fn poll(&self) -> Duration {
        Duration::from_millis(50)
    }
}

/// A target in an interval, as `--format csv|json` prints it.
#[derive(Serialize)]
struct TargetRow<'a> {
    time_s: f64,
    #[serde(flatten)]
    target: &'a Target,
}

/// `--format csv|json`: every interval's targets in sort order.
struct Plain {
    format: Format,
    key: SortKey,
    header: bool,
}

impl Sink for Plain {
    type Error = CliError;
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
        let time_s = rows.first().map_or(0.0, |r| r.time_s);
        let all = mon.targets(rows);
        let mut targets: Vec<&Target> = all.iter().collect();
        targets.sort_by(|a, b| compare(a, b, self.key, false));
        let text = if self.format == Format::Json {
            targets
                .iter()
                .map(|t| serde_json::to_string(&TargetRow { time_s, target: t }).expect("rows serialise") + "\n")
                .collect()
        } else {
            let mut t = Table::new(&[
                ("time_s", ""),
                ("name", ""),
                ("pmus", ""),
                ("link", ""),
                ("rx_gbps", ""),
                ("rx_pct", ""),
                ("tx_gbps", ""),
                ("tx_pct", ""),
                ("total_gbps", ""),
                ("rate", ""),
                ("running_pct", ""),
            ]);
            for tg in &targets {
                let mut cells = vec![Cell::num(time_s, 6)];
                cells.extend(target_cells(tg, SortKey::Total.value(tg)));
                t.push(cells);
            }
            strip_header(t.to_csv(), !std::mem::replace(&mut self.header, true))
        };
        let mut out = std::io::stdout();
        Ok(out.write_all(text.as_bytes()).and_then(|_| out.flush()).is_ok())
    }
}

pub fn run(a: &TopArgs) -> Result<String, CliError> {
    check_duration(a.duration)?;
    if a.format == Format::Table && !terminal::stdout_is_terminal() {
        return Err(usage(
            "pmu top: stdout is not a terminal; use --format csv|json for rows every interval, \
             or `pmu record` / `pmu stat -I`",
        ));
    }
    // Before the source starts: a signal during setup still ends the run cleanly.
    let cancel = cancel_on_signals();
    let (mut mon, mut src) = a.watch.open()?;
    let sched = Schedule {
        interval: Some(Duration::from_millis(a.watch.interval)),
        duration: a.duration,
        command: &[],
    };
    if a.format != Format::Table {
        let mut plain = Plain {
            format: a.format,
            key: a.sort,
            header: false,
        };
        monitor::run(src.as_mut(), &mut mon, sched, &cancel, &mut plain)?;
        return Ok(String::new());
    }
    let screen = Screen::enter().map_err(|e| CliError::Runtime(format!("cannot set up the terminal: {e}")))?;
    let mut view = View {
        screen,
        board: Board {
            trends: Vec::new(),
            key: a.sort,
            reverse: false,
            time_s: 0.0,
            interval_ms: a.watch.interval,
            colours: terminal::colours(),
        },
    };
    let first = format!("pcieperf pmu top: first interval in {} ms ...", a.watch.interval);
    view.screen
        .draw(|_, _| vec![vec![Span::styled(first, Style::default())]])
        .map_err(|e| CliError::Runtime(format!("cannot draw: {e}")))?;
    monitor::run(src.as_mut(), &mut mon, sched, &cancel, &mut view)?;
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str, rx: Option<f64>, tx: Option<f64>, rate: Option<f64>) -> Target {
        Target {
            name: name.into(),
            pmus: "p".into(),
            link: None,
            rx_gbps: rx,
            tx_gbps: tx,
            rx_pct: None,
            tx_pct: None,
            rate,
            running_pct: 100.0,
        }
    }

    #[test]
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline([0.0, 1.0, 2.0, 4.0].into_iter()), "▁▃▅█");
        assert_eq!(sparkline([0.0, 0.0].into_iter()), "▁▁");
        assert_eq!(sparkline(std::iter::empty()), "");
    }

    #[test]
    fn sort_orders_numbers_down_and_names_up() {
        let a = target("0000:30:03.0", Some(1.0), Some(5.0), None);
        let b = target("0000:10:00.0", Some(3.0), Some(0.5), None);
        let c = target("software/cpu-clock/", None, None, Some(1e9));
        let names = |key, rev| {
            let mut v = [&a, &b, &c];
            v.sort_by(|x, y| compare(x, y, key, rev));
            v.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
        };
        assert_eq!(
            names(SortKey::Total, false),
            ["0000:30:03.0", "0000:10:00.0", "software/cpu-clock/"]
        );
        assert_eq!(
            names(SortKey::Rx, false),
            ["0000:10:00.0", "0000:30:03.0", "software/cpu-clock/"]
        );
        assert_eq!(names(SortKey::Rate, false)[0], "software/cpu-clock/");
        assert_eq!(
            names(SortKey::Name, false),
            ["0000:10:00.0", "0000:30:03.0", "software/cpu-clock/"]
        );
        assert_eq!(
            names(SortKey::Name, true),
            ["software/cpu-clock/", "0000:30:03.0", "0000:10:00.0"]
        );
    }
}
