//! `pcieperf bench report`: draw a run directory (ours or an original pcie-bench data
//! directory) as charts next to the model — one self-contained HTML page, SVG files on request,
//! or a short text summary — and, with `--compare`, overlay other runs and tabulate how far
//! each is from the first.

use super::compare_tables::{comparison_tables, comparison_text, difference_table};
use crate::error::CliError;
use crate::output::{check_dir, check_files, shown, write_dir, write_file, Format};
use clap::Args;
use pcie_bench::{run_letter, ChartSet, RunData};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory, or an original pcie-bench data directory
    dir: PathBuf,
    /// Write a self-contained HTML report (inline SVG, no network) to this file
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also write each chart as <name>.svg into this directory (created if missing)
    #[arg(long)]
    svg_dir: Option<PathBuf>,
    /// Overlay this run on DIR's charts and list its per-point differences from DIR (repeatable)
    #[arg(long, value_name = "DIR2")]
    compare: Vec<PathBuf>,
    /// Printed summary: table for people; csv (the point differences, needs --compare) or json
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

fn load(dir: &Path) -> Result<RunData, CliError> {
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: not a directory (expected a run directory or a pcie-bench data directory)",
            dir.display()
        )));
    }
    let data = RunData::load(dir).map_err(|e| CliError::Usage(e.to_string()))?;
    if data.info.is_none() && data.files.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: not a run directory or pcie-bench data directory (no run.json and no result CSV files)",
            dir.display()
        )));
    }
    Ok(data)
}

/// A chart as `--format json` lists it.
#[derive(serde::Serialize)]
struct ChartSummary<'a> {
    name: &'a str,
    heading: &'a str,
    series: Vec<&'a str>,
    notes: &'a [String],
}

pub fn run(a: &ReportArgs) -> Result<String, CliError> {
    check_files(&[("--html", a.html.as_deref())])?;
    if let Some(d) = &a.svg_dir {
        check_dir("--svg-dir", d)?;
    }
    let dir = &a.dir;
    let data = load(dir)?;
    // A GPU run's verdict (from run.json and the committed runs; the live path is not this
    // run's, so no `check` here).
    let judged = super::verdict::judge(&data, &[]);
    if a.format == Format::Csv && a.compare.is_empty() && judged.is_none() {
        return Err(CliError::Usage(
            "--format csv lists the point differences between runs (it needs --compare DIR2) or a GPU run's verdict"
                .into(),
        ));
    }
    let others = a.compare.iter().map(|d| load(d)).collect::<Result<Vec<_>, _>>()?;
    let set = ChartSet::new(&data, &others);
    let (drawn, skipped, description, comparisons) = (&set.charts, &set.not_drawn, &set.description, &set.comparisons);

    if let Some(svg_dir) = &a.svg_dir {
        let files: Vec<_> = drawn
            .iter()
            .map(|d| (format!("{}.svg", d.name), d.chart.to_svg().into_bytes()))
            .collect();
        write_dir(svg_dir, &files)?;
    }
    let mut text = String::new();
    if let Some(path) = &a.html {
        let tables = comparisons
            .iter()
            .enumerate()
            .flat_map(|(i, c)| comparison_tables(c, &run_letter(i + 1)))
            .collect();
        write_file(path, &set.to_html(tables))?;
        if a.format == Format::Table {
            text.push_str(&format!("Wrote {} ({} charts)\n", shown(path), drawn.len()));
        }
    }
    match a.format {
        Format::Csv if a.compare.is_empty() => return Ok(judged.as_ref().map(super::verdict::csv).unwrap_or_default()),
        Format::Csv => {
            // One table of every run's differences from the first.
            let mut all = String::new();
            for (i, c) in comparisons.iter().enumerate() {
                let csv = difference_table(c, None).to_csv();
                let body = if i == 0 {
                    csv.as_str()
                } else {
                    csv.split_once('\n').map_or("", |x| x.1)
                };
                all.push_str(body);
            }
            return Ok(all);
        }
        Format::Json => {
            let charts: Vec<ChartSummary> = drawn
                .iter()
                .map(|d| ChartSummary {
                    name: &d.name,
                    heading: &d.heading,
                    series: d.chart.series.iter().map(|s| s.name.as_str()).collect(),
                    notes: &d.notes,
                })
                .collect();
            return Ok(crate::output::json(&serde_json::json!({
                "dir": dir,
                "description": description,
                "charts": charts,
                "not_drawn": skipped,
                "comparisons": comparisons,
                "verdict": judged,
            })));
        }
        Format::Table => {}
    }
    if a.html.is_none() {
        text.push_str(&format!("Report of {}\n", dir.display()));
        for d in description {
            text.push_str(&format!("  {d}\n"));
        }
        text.push_str(&format!("\nCharts ({}):\n", drawn.len()));
        let width = drawn.iter().map(|d| d.name.len()).max().unwrap_or(0);
        for d in drawn {
            text.push_str(&format!(
                "  {:width$}  {} ({} series)\n",
                d.name,
                d.heading,
                d.chart.series.len()
            ));
            for n in d.notes.iter().filter(|n| n.starts_with("Explain")) {
                text.push_str(&format!("  {:width$}    {n}\n", ""));
            }
        }
        if !skipped.is_empty() {
            text.push_str(&format!("\nNot drawn: {}\n", skipped.join(", ")));
        }
    }
    if let Some(v) = &judged {
        text.push_str(&super::verdict::text(v));
    }
    for (i, c) in comparisons.iter().enumerate() {
        text.push_str(&comparison_text(c, &run_letter(i + 1)));
    }
    if a.html.is_none() {
        text.push_str("\nUse --html FILE for the report, --svg-dir DIR for the charts as SVG files.\n");
    }
    if let Some(svg_dir) = &a.svg_dir {
        text.push_str(&format!("Wrote {} SVG files to {}\n", drawn.len(), svg_dir.display()));
    }
    Ok(text)
}
