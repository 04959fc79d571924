//! `bench report --compare` as tables: the comparison statistics (computed by
//! `pcie_bench::compare`) for the terminal, CSV and the HTML page.

use crate::output::{Cell, Table};
use pcie_bench::RunComparison;
use pcie_report::TableSection;

/// How many of the largest differences the text summary lists (the HTML and CSV list all).
const TEXT_DIFFERENCES: usize = 15;

/// MAPE and largest difference per file, test, cache state and metric, in file order.
fn summary_table(c: &RunComparison) -> Table {
    let mut t = Table::new(&[
        ("file", "File"),
        ("test", "Test"),
        ("cache", "Cache"),
        ("metric", "Metric"),
        ("points", "Points"),
        ("mape_pct", "MAPE (%)"),
        ("max_abs_pct", "Max |diff| (%)"),
    ]);
    for s in &c.summary {
        t.push(vec![
            Cell::text(&s.file),
            Cell::text(s.test.csv_name()),
            Cell::text(s.cache.csv_name()),
            Cell::text(s.metric.label()),
            Cell::Int(s.error.points as u64),
            Cell::num(s.error.mape_pct, 2),
            Cell::num(s.error.max_abs_pct, 2),
        ]);
    }
    t
}

/// KS distance per CDF section.
fn cdf_table(c: &RunComparison) -> Table {
    let mut t = Table::new(&[("file", "File"), ("section", "Section"), ("test", "Test"), ("ks", "KS")]);
    for d in &c.cdfs {
        t.push(vec![
            Cell::text(&d.file),
            Cell::Int(d.section as u64),
            d.key.map_or(Cell::Empty, |k| Cell::text(k.to_string())),
            Cell::num(d.ks, 3),
        ]);
    }
    t
}

/// The first `limit` point differences (all with `None`), largest first.
pub fn difference_table(c: &RunComparison, limit: Option<usize>) -> Table {
    let mut t = Table::new(&[
        ("file", "File"),
        ("key", "Test,PAT,Cache,HO,DO,WinSZ,SZ"),
        ("metric", "Metric"),
        ("first", "First"),
        ("other", "Other"),
        ("diff_pct", "Diff (%)"),
    ]);
    for d in c.differences.iter().take(limit.unwrap_or(usize::MAX)) {
        t.push(vec![
            Cell::text(&d.file),
            Cell::text(d.key.to_string()),
            Cell::text(d.metric.label()),
            Cell::num(d.first, 2),
            Cell::num(d.other, 2),
            Cell::num(d.diff_pct, 2),
        ]);
    }
    t
}

fn html_table(id: String, heading: String, notes: Vec<String>, t: &Table) -> TableSection {
    let (columns, rows) = t.human_cells();
    TableSection {
        id,
        heading,
        columns,
        rows,
        notes,
    }
}

pub fn comparison_tables(c: &RunComparison, letter: &str) -> Vec<TableSection> {
    if c.refused.is_some() {
        // The description says why (ChartSet puts the reason beside the run's letter).
        return Vec::new();
    }
    let mut out = vec![html_table(
        format!("compare-{letter}-summary"),
        format!("{letter} vs A: mean absolute difference per file, test and cache state"),
        vec![format!(
            "{} compared with {}: differences are ({letter} − A) / A. {} points matched, {} without a counterpart.",
            c.other,
            c.first,
            c.differences.len(),
            c.unmatched
        )],
        &summary_table(c),
    )];
    if !c.cdfs.is_empty() {
        out.push(html_table(
            format!("compare-{letter}-cdf"),
            format!("{letter} vs A: latency CDFs (Kolmogorov–Smirnov distance)"),
            vec![],
            &cdf_table(c),
        ));
    }
    out.push(html_table(
        format!("compare-{letter}-points"),
        format!("{letter} vs A: every point, largest difference first"),
        vec![],
        &difference_table(c, None),
    ));
    out
}

pub fn comparison_text(c: &RunComparison, letter: &str) -> String {
    if let Some(why) = &c.refused {
        return format!(
            "\nNot compared: {letter} = {} against A = {}: {why}.\n",
            c.other, c.first
        );
    }
    let mut text = format!(
        "\nCompared: {letter} = {} against A = {}; differences are ({letter} − A) / A. {} points matched, {} without a counterpart.\n\n",
        c.other,
        c.first,
        c.differences.len(),
        c.unmatched
    );
    text.push_str(&summary_table(c).to_human());
    if !c.cdfs.is_empty() {
        text.push('\n');
        text.push_str(&cdf_table(c).to_human());
    }
    if !c.differences.is_empty() {
        text.push_str(&format!(
            "\nLargest differences ({} of {}; --html or --format csv lists all):\n",
            TEXT_DIFFERENCES.min(c.differences.len()),
            c.differences.len()
        ));
        text.push_str(&difference_table(c, Some(TEXT_DIFFERENCES)).to_human());
    }
    text
}
