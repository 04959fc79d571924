//! Self-contained HTML reports: a title, a short description, tables (such as the differences
//! between compared runs) and one section per chart, with every chart inlined as SVG. No
//! scripts, no style sheets or fonts from elsewhere, no network.

use crate::chart::Chart;
use crate::markup::escape;
use std::fmt::Write;

/// A report page: what was measured, then the charts in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Page title and top heading.
    pub title: String,
    /// Paragraphs describing the run (plain text; escaped on output).
    pub description: Vec<String>,
    /// Shown before the charts.
    pub tables: Vec<TableSection>,
    pub sections: Vec<Section>,
}

/// A table with its heading and notes; cells that read as numbers are right-aligned.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSection {
    /// A short identifier, unique within the report.
    pub id: String,
    pub heading: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Plain-text paragraphs shown above the table.
    pub notes: Vec<String>,
}

/// One chart with its heading and notes (such as an "explain" line) below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// A short identifier, unique within the report (used as the section's `id`).
    pub id: String,
    pub heading: String,
    pub chart: Chart,
    /// Plain-text paragraphs shown under the chart.
    pub notes: Vec<String>,
}

const STYLE: &str = "body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222;background:#fff}\
h1{font-size:1.6em;margin-bottom:0.4em}h2{font-size:1.2em;margin:0 0 0.5em 0}\
p{line-height:1.4}\
section.chart{margin:2.5em 0;padding-top:1em;border-top:1px solid #ccc}\
section.chart svg{display:block;max-width:100%;height:auto}\
p.note{font-size:0.95em;color:#333}\
nav ul{columns:2;font-size:0.95em}\
section.table{margin:2.5em 0}section.table div{max-height:32em;overflow:auto;border:1px solid #ccc}\
table{border-collapse:collapse;font-size:0.9em;width:100%}\
th,td{padding:0.2em 0.6em;border-bottom:1px solid #e4e4e4;text-align:left;white-space:nowrap}\
th{position:sticky;top:0;background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}";

impl Report {
    /// Renders the whole page. Deterministic: same report, same bytes.
    pub fn to_html(&self) -> String {
        let mut out = String::new();
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
        );
        for p in &self.description {
            let _ = writeln!(out, "<p class=\"description\">{}</p>", escape(p));
        }
        if self.sections.is_empty() {
            out.push_str("<p>No charts: the directory has none of the result files a report draws.</p>\n");
        }
        let entries: Vec<(&str, &str)> = self
            .tables
            .iter()
            .map(|t| (t.id.as_str(), t.heading.as_str()))
            .chain(self.sections.iter().map(|s| (s.id.as_str(), s.heading.as_str())))
            .collect();
        if !entries.is_empty() {
            out.push_str("<nav><ul>\n");
            for (id, heading) in entries {
                let _ = writeln!(out, "<li><a href=\"#{}\">{}</a></li>", escape(id), escape(heading));
            }
            out.push_str("</ul></nav>\n");
        }
        for t in &self.tables {
            t.render(&mut out);
        }
        for s in &self.sections {
            let _ = writeln!(
                out,
                "<section class=\"chart\" id=\"{}\">\n<h2>{}</h2>",
                escape(&s.id),
                escape(&s.heading)
            );
            out.push_str(&s.chart.to_svg());
            out.push('\n');
            for n in &s.notes {
                let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
            }
            out.push_str("</section>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}

impl TableSection {
    fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "<section class=\"table\" id=\"{}\">\n<h2>{}</h2>",
            escape(&self.id),
            escape(&self.heading)
        );
        for n in &self.notes {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(n));
        }
        out.push_str("<div><table>\n<thead><tr>");
        for c in &self.columns {
            let _ = write!(out, "<th>{}</th>", escape(c));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for cell in row {
                let class = if cell.trim_start_matches(['-', '+']).parse::<f64>().is_ok() {
                    " class=\"num\""
                } else {
                    ""
                };
                let _ = write!(out, "<td{class}>{}</td>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n</section>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Axis, Point, Series};

    fn chart(title: &str) -> Chart {
        Chart {
            title: title.into(),
            x: Axis::linear("Transfer size (B)"),
            y: Axis::linear("Bandwidth (Gb/s)"),
            series: vec![
                Series::line("read", vec![Point::new(64.0, 10.0), Point::new(128.0, 20.0)]),
                Series::reference("model", vec![Point::new(64.0, 12.0), Point::new(128.0, 24.0)]),
            ],
        }
    }

    #[test]
    fn page_is_self_contained_and_escaped() {
        let r = Report {
            title: "Run <a> & \"b\"".into(),
            description: vec!["<script>alert(1)</script>".into()],
            tables: vec![TableSection {
                id: "diff".into(),
                heading: "Differences".into(),
                columns: vec!["Point".into(), "Diff (%)".into()],
                rows: vec![vec!["<64 B>".into(), "-1.5".into()]],
                notes: vec![],
            }],
            sections: vec![Section {
                id: "bw".into(),
                heading: "Bandwidth <x>".into(),
                chart: chart("t"),
                notes: vec!["reaches 90% & more".into()],
            }],
        };
        let html = r.to_html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>Run &lt;a&gt; &amp; &quot;b&quot;</title>"));
        assert!(!html.contains("<script"));
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("<h2>Bandwidth &lt;x&gt;</h2>"));
        assert!(html.contains("reaches 90% &amp; more"));
        assert!(html.contains("<td>&lt;64 B&gt;</td><td class=\"num\">-1.5</td>"));
        assert!(html.contains("<a href=\"#diff\">Differences</a>"));
        assert_eq!(html.matches("class=\"series\"").count(), 2);
        // The only URL is the SVG namespace.
        let urls = html.matches("http").count();
        assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
        assert_eq!(html, r.to_html());
    }

    #[test]
    fn empty_report_says_so() {
        let r = Report {
            title: "empty".into(),
            description: vec![],
            tables: vec![],
            sections: vec![],
        };
        assert!(r.to_html().contains("No charts"));
    }
}
