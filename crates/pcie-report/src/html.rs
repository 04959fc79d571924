//! Self-contained HTML reports: a title, a short description and one section per chart, with
//! every chart inlined as SVG. No scripts, no style sheets or fonts from elsewhere, no network.

use crate::chart::Chart;
use crate::svg::escape;
use std::fmt::Write;

/// A report page: what was measured, then the charts in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Page title and top heading.
    pub title: String,
    /// Paragraphs describing the run (plain text; escaped on output).
    pub description: Vec<String>,
    pub sections: Vec<Section>,
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
nav ul{columns:2;font-size:0.95em}";

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
        } else {
            out.push_str("<nav><ul>\n");
            for s in &self.sections {
                let _ = writeln!(
                    out,
                    "<li><a href=\"#{}\">{}</a></li>",
                    escape(&s.id),
                    escape(&s.heading)
                );
            }
            out.push_str("</ul></nav>\n");
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
            sections: vec![],
        };
        assert!(r.to_html().contains("No charts"));
    }
}
