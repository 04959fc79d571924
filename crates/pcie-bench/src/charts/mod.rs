//! The chart set of a run: which charts its result files support (the paper's figures: bandwidth
//! and latency vs size next to the model, CDFs, window and offset sweeps), their series, axes and
//! explain notes, the run's description, other runs overlaid with `--compare`, and the HTML page
//! that holds them all, drawn with `pcie-report`.

mod cdf;
mod labels;
mod overlay;
mod sweeps;

pub use overlay::run_letter;

use crate::compare::{compare, RunComparison};
use crate::results::{Engine, SM_MIN_WINDOW};
use crate::results::{LatencyRow, ResultData, RunData};
use cdf::cdf_chart;
use pcie_model::{LinkConfig, LinkParams};
use pcie_report::{Chart, Report, Section, TableSection};
use std::path::Path;
use sweeps::{latency_sizes, offset_charts, size_sweep, window_chart};

/// The link assumed when a directory does not say (no run.json): the one pcie-bench's NFP-6000
/// data was measured on, and the one pciebench-netfpga's NetFPGA-SUME design sets up
/// (`data/profiles/netfpga-sume.toml`: C_LOG2_MAX_PAYLOAD 8, C_LOG2_MAX_READ_REQUEST 9).
const ASSUMED_LINK: &str = "Gen3 x8, MPS 256, MRRS 512";

/// The model's link for a run, and whether it was assumed rather than recorded.
pub(crate) struct ModelLink {
    pub(crate) cfg: LinkConfig,
    pub(crate) assumed: bool,
    /// Whose link an assumed one is, for the notes that say so.
    pub(crate) whose: &'static str,
}

fn model_link(run: &RunData) -> ModelLink {
    let whose = if run.netfpga {
        "pciebench-netfpga's NetFPGA-SUME design"
    } else {
        "pcie-bench's NFP-6000 runs"
    };
    if let Some(cfg) = run.info.as_ref().and_then(|i| i.link.clone()) {
        return ModelLink {
            cfg,
            assumed: false,
            whose,
        };
    }
    ModelLink {
        cfg: LinkConfig::new(&LinkParams::default()).expect("pcie-bench's default link is valid"),
        assumed: true,
        whose,
    }
}

/// One chart with its file name stem, heading and explain lines.
#[derive(Debug, Clone)]
pub struct RunChart {
    /// Position in the report: size sweeps first (the paper's figure order), offsets last.
    rank: u8,
    /// The result file's base (with `_host` or `_device` for offset sweeps): the SVG file's stem.
    pub name: String,
    pub heading: String,
    pub chart: Chart,
    pub notes: Vec<String>,
}

fn latency_rows<'a>(run: &'a RunData, base: &str) -> Option<&'a [LatencyRow]> {
    match run.get(base)? {
        ResultData::Latency(r) => Some(r),
        _ => None,
    }
}

/// Every chart the run's data supports, in file order; and the files nothing was drawn for.
fn draw(run: &RunData, link: &ModelLink) -> (Vec<RunChart>, Vec<String>) {
    const BW: (&str, &str) = ("Bandwidth", "Bandwidth (Gb/s)");
    const LAT: (&str, &str) = ("Median latency", "Median latency (ns)");
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for f in &run.files {
        let b = f.base.as_str();
        let before = out.len();
        match &f.data {
            ResultData::Bandwidth(rows) if b == "bw_dma_sz_sweep" => {
                out.extend(size_sweep(b, rows, latency_rows(run, "lat_dma_sizes"), link))
            }
            ResultData::Bandwidth(rows) if b.contains("_win_sweep") => {
                out.extend(window_chart(b, rows, |r| &r.key, |r| r.bw_gbps, BW))
            }
            ResultData::Bandwidth(rows) if b.contains("_off_") => {
                out.extend(offset_charts(b, rows, |r| &r.key, |r| r.bw_gbps, BW))
            }
            ResultData::Latency(rows) if b.contains("_sizes") => out.extend(latency_sizes(b, rows)),
            ResultData::Latency(rows) if b.contains("_sweep_") => {
                out.extend(window_chart(b, rows, |r| &r.key, |r| r.med_ns, LAT))
            }
            ResultData::Latency(rows) if b.contains("_off_") => {
                out.extend(offset_charts(b, rows, |r| &r.key, |r| r.med_ns, LAT))
            }
            ResultData::Cdf(sections) => {
                let rows = b.strip_suffix("_cdf").and_then(|l| latency_rows(run, l));
                out.extend(cdf_chart(b, sections, rows))
            }
            _ => {}
        }
        if out.len() == before {
            skipped.push(b.to_string());
        }
    }
    out.sort_by_key(|d| d.rank);
    (out, skipped)
}

/// The directory's own name, as descriptions and comparisons name runs.
pub fn dir_name(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| dir.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

fn description(run: &RunData, link: &ModelLink) -> Vec<String> {
    match &run.info {
        Some(i) => {
            let mut d = vec![format!(
                "{} {} run of suite \"{}\" on backend {}, seed {}, started {}{}.",
                i.tool,
                i.version,
                i.suite,
                i.backend.name,
                i.seed,
                i.start_time,
                match &i.end_time {
                    Some(t) => format!(", finished {t}"),
                    None => " (interrupted: no end time)".into(),
                }
            )];
            if let Some(desc) = i.backend.description.as_object() {
                for (role, v) in desc {
                    if let Some(text) = v.get("description").and_then(|t| t.as_str()) {
                        d.push(format!("{role}: {text}"));
                    }
                }
            }
            d.push(format!(
                "Link: {}{}. NUMA {}, IOMMU {:?}. Started on {} ({}, {} CPUs, kernel {}).",
                link.cfg,
                if link.assumed {
                    " (assumed: run.json records no link)"
                } else {
                    ""
                },
                i.numa,
                i.iommu,
                i.host.hostname,
                i.host.cpu_model,
                i.host.cpus,
                i.host.kernel
            ));
            d.push(format!("Command line: {}", i.command_line.join(" ")));
            if !i.left_out.is_empty() {
                d.push(format!("Left out by the backend: {}.", i.left_out.join("; ")));
            }
            d.extend(small_sm_windows(run));
            d
        }
        None => vec![format!(
            "{} data directory {} (no run.json). The model curves assume the link of {}, {ASSUMED_LINK}: {}.",
            if run.netfpga { "pciebench-netfpga" } else { "pcie-bench" },
            dir_name(&run.dir),
            link.whose,
            link.cfg
        )],
    }
}

/// A caution for a GPU run's bandwidth rows the GPU's threads ran in windows too small to
/// measure the link (runs made before pcieperf left such tests out, [`SM_MIN_WINDOW`]).
fn small_sm_windows(run: &RunData) -> Option<String> {
    if run.gpu_engine() != Some(Engine::Sm) {
        return None;
    }
    let mut bases = Vec::new();
    let mut rows = 0;
    for f in &run.files {
        if let ResultData::Bandwidth(r) = &f.data {
            let n = r.iter().filter(|r| r.key.window < SM_MIN_WINDOW).count();
            if n > 0 {
                rows += n;
                bases.push(f.base.as_str());
            }
        }
    }
    (rows > 0).then(|| {
        format!(
            "Caution: {rows} bandwidth rows ({}) ran on the GPU's threads in windows under {} KiB, where \
             thousands of threads hit the same host cache lines at once: writes merge before the link \
             and reads of a line wait for each other, so these rows do not measure the link \
             (pcieperf now leaves such tests out; docs/backends.md).",
            bases.join(", "),
            SM_MIN_WINDOW >> 10
        )
    })
}

/// Everything `bench report` shows of a run and the runs compared with it.
#[derive(Debug, Clone)]
pub struct ChartSet {
    /// The first run's directory name; the others' are in their comparisons.
    pub name: String,
    /// Lines saying what ran, on what link and where; which letter is which run.
    pub description: Vec<String>,
    /// The first run's charts, the other runs' measured series overlaid.
    pub charts: Vec<RunChart>,
    /// Result files of the first run no chart was drawn for.
    pub not_drawn: Vec<String>,
    /// How far each other run is from the first, in order (B, C, ...).
    pub comparisons: Vec<RunComparison>,
}

impl ChartSet {
    /// The charts of `first`, with `others` overlaid and compared with it.
    pub fn new(first: &RunData, others: &[RunData]) -> ChartSet {
        let link = model_link(first);
        let (mut charts, not_drawn) = draw(first, &link);
        let mut description = description(first, &link);
        let name = dir_name(&first.dir);
        let comparisons: Vec<RunComparison> = others
            .iter()
            .map(|o| compare(first, o, (&name, &dir_name(&o.dir))))
            .collect();
        if !others.is_empty() {
            // A run not compared is not drawn over the first either.
            let other_charts: Vec<Vec<RunChart>> = others
                .iter()
                .zip(&comparisons)
                .map(|(o, c)| match c.refused {
                    None => draw(o, &model_link(o)).0,
                    Some(_) => Vec::new(),
                })
                .collect();
            overlay::overlay(&mut charts, &other_charts);
            let mut runs = vec![format!("A = {name} (the reference for differences)")];
            runs.extend(comparisons.iter().enumerate().map(|(i, c)| {
                let refused = c.refused.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
                format!("{} = {}{refused}", run_letter(i + 1), c.other)
            }));
            description.insert(0, format!("Runs compared: {}.", runs.join("; ")));
        }
        ChartSet {
            name,
            description,
            charts,
            not_drawn,
            comparisons,
        }
    }

    /// The self-contained HTML page: description, `tables` (the comparisons as the caller
    /// formats them), then every chart.
    pub fn to_html(&self, tables: Vec<TableSection>) -> String {
        let title = match self.comparisons.len() {
            0 => format!("pcieperf bench report: {}", self.name),
            n => format!("pcieperf bench report: {} compared with {n} run(s)", self.name),
        };
        Report {
            title,
            description: self.description.clone(),
            tables,
            sections: self
                .charts
                .iter()
                .map(|d| Section {
                    id: d.name.clone(),
                    heading: format!("{} ({})", d.heading, d.name),
                    chart: d.chart.clone(),
                    notes: d.notes.clone(),
                })
                .collect(),
        }
        .to_html()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_link_gets_the_assumed_one() {
        let mut run = RunData {
            dir: "x".into(),
            info: None,
            files: Vec::new(),
            netfpga: false,
        };
        assert!(model_link(&run).assumed);
        assert_eq!(model_link(&run).whose, "pcie-bench's NFP-6000 runs");
        run.netfpga = true;
        assert_eq!(model_link(&run).whose, "pciebench-netfpga's NetFPGA-SUME design");
    }

    #[test]
    fn labels_and_nice_numbers() {
        use super::cdf::{nice_ceil, quantile};
        use super::labels::bytes_label;

        assert_eq!(bytes_label(8192), "8 KB");
        assert_eq!(bytes_label(1_572_864), "1.5 MB");
        assert_eq!(bytes_label(64), "64 B");
        assert_eq!(nice_ceil(1416.0), 2000.0);
        assert_eq!(nice_ceil(2100.0), 2500.0);
        assert_eq!(nice_ceil(100.0), 100.0);
        let cdf = [(1.0, 0.0), (2.0, 0.5), (3.0, 0.999), (9.0, 1.0)];
        assert_eq!(quantile(&cdf, 0.5), Some(2.0));
        assert_eq!(quantile(&cdf, 0.999), Some(3.0));
    }
}
