//! The CSV dialect of pcie-bench and of our files, read and written by the `csv` crate: a
//! header row, comma-separated fields, quoted (RFC 4180) where a field holds a comma, a quote
//! or a line end, LF or CRLF line ends. Columns are found by header name, so column order and
//! extra columns do not matter.

use super::ResultsError;
use std::path::{Path, PathBuf};

/// Largest measured figure a result file may hold (ns, Gb/s, transactions/s): 1e15 ns is 11.6
/// days. Larger numbers are nonsense for one test and break chart scales.
pub(super) const MAX_FIGURE: f64 = 1e15;

/// A parsed CSV file.
pub(super) struct CsvTable {
    path: PathBuf,
    pub header: Vec<String>,
    pub rows: Vec<CsvRow>,
}

/// A data row and its 1-based line number.
pub(super) struct CsvRow {
    pub line: usize,
    fields: ::csv::StringRecord,
}

/// A located column.
#[derive(Debug, Clone)]
pub(super) struct Col {
    index: usize,
    name: String,
}

impl CsvTable {
    pub fn parse(path: &Path, text: &str) -> Result<CsvTable, ResultsError> {
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(::csv::Trim::All)
            .from_reader(text.as_bytes());
        let mut records = reader.records().filter(|r| r.as_ref().map_or(true, |r| !is_blank(r)));
        let head = records
            .next()
            .ok_or_else(|| ResultsError::file(path, "empty file: no header row"))?
            .map_err(|e| csv_error(path, e))?;
        let header: Vec<String> = head.iter().map(str::to_string).collect();
        let mut lines = LineCounter::new(text);
        let mut rows = Vec::new();
        for record in records {
            let fields = record.map_err(|e| csv_error(path, e))?;
            let line = lines.line_at(fields.position().map_or(0, |p| p.byte()));
            if fields.len() != header.len() {
                return Err(ResultsError {
                    path: path.to_path_buf(),
                    line: Some(line),
                    column: None,
                    message: format!("{} fields, but the header has {}", fields.len(), header.len()),
                });
            }
            rows.push(CsvRow { line, fields });
        }
        Ok(CsvTable {
            path: path.to_path_buf(),
            header,
            rows,
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.header.iter().any(|h| h == name)
    }

    /// The first of `names` present (several spellings of one column).
    pub fn optional(&self, names: &[&str]) -> Option<Col> {
        names.iter().find_map(|n| {
            self.header.iter().position(|h| h == n).map(|index| Col {
                index,
                name: n.to_string(),
            })
        })
    }

    pub fn column(&self, names: &[&str]) -> Result<Col, ResultsError> {
        self.optional(names).ok_or_else(|| ResultsError {
            path: self.path.clone(),
            line: Some(1),
            column: Some(names[0].to_string()),
            message: "missing from the header".into(),
        })
    }

    pub fn err(&self, row: &CsvRow, col: &Col, message: String) -> ResultsError {
        ResultsError {
            path: self.path.clone(),
            line: Some(row.line),
            column: Some(col.name.clone()),
            message,
        }
    }

    pub fn text<'a>(&self, row: &'a CsvRow, col: &Col) -> &'a str {
        &row.fields[col.index]
    }

    /// A field parsed with `FromStr`; the error names file, line and column.
    pub fn parsed<T: std::str::FromStr>(&self, row: &CsvRow, col: &Col, what: &str) -> Result<T, ResultsError> {
        let s = self.text(row, col);
        s.parse()
            .map_err(|_| self.err(row, col, format!("\"{s}\" is not {what}")))
    }

    /// A measured figure: a number from 0 to [`MAX_FIGURE`] (not NaN, not infinite).
    pub fn float(&self, row: &CsvRow, col: &Col) -> Result<f64, ResultsError> {
        let v = self.parsed::<f64>(row, col, "a number")?;
        if (0.0..=MAX_FIGURE).contains(&v) {
            Ok(v)
        } else {
            Err(self.err(
                row,
                col,
                format!("{} must be a number from 0 to {MAX_FIGURE:e}", self.text(row, col)),
            ))
        }
    }

    /// A non-negative whole number; pcie-bench sometimes writes them as floats (`1572864.0`).
    pub fn uint(&self, row: &CsvRow, col: &Col) -> Result<u64, ResultsError> {
        let s = self.text(row, col);
        if let Ok(n) = s.parse::<u64>() {
            return Ok(n);
        }
        match s.parse::<f64>() {
            Ok(v) if v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64 => Ok(v as u64),
            _ => Err(self.err(row, col, format!("\"{s}\" is not a whole number"))),
        }
    }

    pub fn uint32(&self, row: &CsvRow, col: &Col) -> Result<u32, ResultsError> {
        let n = self.uint(row, col)?;
        u32::try_from(n).map_err(|_| self.err(row, col, format!("{n} is too large")))
    }
}

/// A line of only blanks: skipped, as pcie-bench's files end with one.
fn is_blank(record: &::csv::StringRecord) -> bool {
    record.len() == 1 && record[0].is_empty()
}

/// 1-based line numbers of records from their byte offsets, asked in ascending order. The csv
/// crate puts a record's start after the previous record, before the empty lines it skipped
/// (and, for CRLF, between the CR and the LF, which its own line count then misses): the
/// record's line is the first after those line ends.
struct LineCounter<'a> {
    text: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> LineCounter<'a> {
        LineCounter {
            text: text.as_bytes(),
            offset: 0,
            line: 1,
        }
    }

    fn line_at(&mut self, byte: u64) -> usize {
        let start = usize::try_from(byte)
            .unwrap_or(usize::MAX)
            .clamp(self.offset, self.text.len());
        let skipped = self.text[start..]
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        let end = start + skipped;
        self.line += self.text[self.offset..end].iter().filter(|&&b| b == b'\n').count();
        self.offset = end;
        self.line
    }
}

fn csv_error(path: &Path, e: ::csv::Error) -> ResultsError {
    ResultsError {
        path: path.to_path_buf(),
        line: None,
        column: None,
        message: e.to_string(),
    }
}

/// One CSV line (with its line end) of `fields`, quoted where a field needs it.
pub(super) fn line<I>(fields: I) -> String
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut w = ::csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail, and quoting UTF-8 fields with ASCII quotes keeps them UTF-8.
    w.write_record(fields.into_iter().map(|f| f.as_ref().as_bytes().to_vec()))
        .expect("writing to memory");
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8 fields")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_lookup_by_name_and_located_errors() {
        let p = Path::new("x.csv");
        let t = CsvTable::parse(p, "B,A\r\n1.0,2\r\n\r\n7,x\r\n").unwrap();
        assert_eq!(t.rows.len(), 2);
        let a = t.column(&["A"]).unwrap();
        let b = t.column(&["Z", "B"]).unwrap();
        assert_eq!(t.uint(&t.rows[0], &b).unwrap(), 1);
        assert_eq!(t.uint(&t.rows[0], &a).unwrap(), 2);
        let e = t.uint(&t.rows[1], &a).unwrap_err();
        assert_eq!(e.to_string(), "x.csv:4: column \"A\": \"x\" is not a whole number");
        assert!(t
            .column(&["C"])
            .unwrap_err()
            .to_string()
            .contains("column \"C\": missing"));
        let e = CsvTable::parse(p, "A,B\n1\n").err().unwrap();
        assert_eq!(e.to_string(), "x.csv:2: 1 fields, but the header has 2");
        assert!(CsvTable::parse(p, "\n").is_err());
    }

    #[test]
    fn quoted_fields_round_trip() {
        let fields = ["plain", "a,b", "say \"hi\"", "two\nlines", ""];
        let text = format!("{}{}", line(["A", "B", "C", "D", "E"]), line(fields));
        assert_eq!(text, "A,B,C,D,E\nplain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\n");
        let t = CsvTable::parse(Path::new("q.csv"), &text).unwrap();
        assert_eq!(t.rows.len(), 1);
        let read: Vec<&str> = ["A", "B", "C", "D", "E"]
            .map(|n| t.text(&t.rows[0], &t.column(&[n]).unwrap()))
            .to_vec();
        assert_eq!(read, fields);
        // A quoted header names its column without the quotes; the next row's line counts
        // the line end inside the quoted field.
        let t = CsvTable::parse(Path::new("q.csv"), "\"BW (Gb/s)\",N\n\"1\n\",2\n3,x\n").unwrap();
        assert_eq!(t.header, ["BW (Gb/s)", "N"]);
        let n = t.column(&["N"]).unwrap();
        assert_eq!(
            t.uint(&t.rows[1], &n).unwrap_err().to_string(),
            "q.csv:4: column \"N\": \"x\" is not a whole number"
        );
    }

    #[test]
    fn figures_are_finite_non_negative_and_bounded() {
        let t = CsvTable::parse(Path::new("z.csv"), "F\n0\n1e15\nNaN\ninf\n-inf\n-1\n1e300\n").unwrap();
        let f = t.column(&["F"]).unwrap();
        assert_eq!(t.float(&t.rows[0], &f).unwrap(), 0.0);
        assert_eq!(t.float(&t.rows[1], &f).unwrap(), 1e15);
        for (row, text) in t.rows[2..].iter().zip(["NaN", "inf", "-inf", "-1", "1e300"]) {
            let e = t.float(row, &f).unwrap_err().to_string();
            assert!(e.ends_with(&format!("{text} must be a number from 0 to 1e15")), "{e}");
        }
    }

    #[test]
    fn whole_numbers_reject_fractions_and_negatives() {
        let t = CsvTable::parse(Path::new("y.csv"), "N\n1.5\n-1\n").unwrap();
        let n = t.column(&["N"]).unwrap();
        assert!(t.uint(&t.rows[0], &n).is_err());
        assert!(t.uint(&t.rows[1], &n).is_err());
    }
}
