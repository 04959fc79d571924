//! One table type behind both the human table and CSV, so the two never disagree.

use std::fmt::Write;

/// A table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// A number with its decimals for people and for CSV; people see it divided by `scale`.
    Num {
        value: f64,
        human: usize,
        csv: usize,
        scale: f64,
    },
    Int(u64),
    Empty,
}

impl Cell {
    /// A bandwidth in Gb/s (2 decimals for people, 4 in CSV).
    pub fn gbps(value: f64) -> Cell {
        Cell::Num {
            value,
            human: 2,
            csv: 4,
            scale: 1.0,
        }
    }

    /// A rate per second: millions for people, whole units in CSV.
    pub fn per_sec(value: f64) -> Cell {
        Cell::Num {
            value,
            human: 2,
            csv: 0,
            scale: 1e6,
        }
    }

    /// A plain number with `decimals` for both audiences.
    pub fn num(value: f64, decimals: usize) -> Cell {
        Cell::Num {
            value,
            human: decimals,
            csv: decimals,
            scale: 1.0,
        }
    }

    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    fn render(&self, for_people: bool) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num {
                value, human, scale, ..
            } if for_people => format!("{:.*}", *human, value / scale),
            Cell::Num { value, csv, .. } => format!("{:.*}", *csv, value),
            Cell::Int(i) => i.to_string(),
            Cell::Empty if for_people => "-".into(),
            Cell::Empty => String::new(),
        }
    }

    fn is_text(&self) -> bool {
        matches!(self, Cell::Text(_))
    }
}

/// Columns have a CSV name (stable, machine-readable) and a heading for people.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<(String, String)>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(columns: &[(&str, &str)]) -> Table {
        Table {
            columns: columns.iter().map(|(c, h)| (c.to_string(), h.to_string())).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a column after the fact (every existing row gets an empty cell).
    pub fn add_column(&mut self, csv: &str, human: &str) {
        self.columns.push((csv.to_string(), human.to_string()));
        for r in &mut self.rows {
            r.push(Cell::Empty);
        }
    }

    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len());
        self.rows.push(row);
    }

    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let names: Vec<String> = self.columns.iter().map(|(c, _)| csv_field(c)).collect();
        out.push_str(&names.join(","));
        out.push('\n');
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| csv_field(&c.render(false))).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// Column headings and cells as people read them (for HTML tables).
    pub fn human_cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let heads = self.columns.iter().map(|(_, h)| h.clone()).collect();
        let body = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.render(true)).collect())
            .collect();
        (heads, body)
    }

    /// Aligned columns: text left, numbers right.
    pub fn to_human(&self) -> String {
        let (heads, body) = self.human_cells();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                body.iter()
                    .map(|r| r[i].chars().count())
                    .chain([self.columns[i].1.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let left: Vec<bool> = (0..self.columns.len())
            .map(|i| self.rows.first().is_some_and(|r| r[i].is_text()))
            .collect();
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if left[i] {
                        format!("{c:<w$}", w = widths[i])
                    } else {
                        format!("{c:>w$}", w = widths[i])
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&mut out, &heads);
        for r in &body {
            line(&mut out, r);
        }
        out
    }
}

/// The field, quoted when it holds a comma, a quote or a line break. Every cell of `pmu stat
/// --format csv` passes here each interval: a loop over the bytes with no iterator adapters, as
/// this crate's release build is unoptimised (Cargo.toml), where a pattern of chars costs ten
/// times as much.
fn csv_field(s: &str) -> String {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && !matches!(b[i], b',' | b'"' | b'\n') {
        i += 1;
    }
    if i < b.len() {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(&[("size", "Size"), ("wr_gbps", "Write Gb/s"), ("limit", "Limit")]);
        t.push(vec![Cell::Int(64), Cell::gbps(42.1049), Cell::text("link, up")]);
        t.push(vec![Cell::Int(4096), Cell::gbps(52.9), Cell::Empty]);
        t
    }

    #[test]
    fn csv_uses_machine_names_and_quotes() {
        assert_eq!(
            sample().to_csv(),
            "size,wr_gbps,limit\n64,42.1049,\"link, up\"\n4096,52.9000,\n"
        );
    }

    #[test]
    fn human_table_aligns() {
        let h = sample().to_human();
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines[0], "Size  Write Gb/s  Limit");
        assert_eq!(lines[1], "  64       42.10  link, up");
        assert_eq!(lines[2], "4096       52.90  -");
    }
}
