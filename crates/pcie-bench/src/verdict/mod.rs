//! "Is my number normal?": a GPU run's headline figures (H2D and D2H bandwidth, 64 B read
//! latency) against the model of the link `run.json` records, beside the band that committed
//! real runs of the same GPU model, link and engine fall in (`data/measured/`, embedded at
//! build time), with one word: normal, low (with the causes found on the path) or above the
//! link (a measurement problem). `docs/backends.md` explains the rules.

mod reference;

pub use reference::committed_runs;

use crate::params::TestKind;
use crate::results::{Engine, ResultData, RunData, RunInfo, SM_MIN_WINDOW};
use pcie_model::{stream, Op, MAX_TRANSFER};
use serde::Serialize;

/// A bandwidth above the model by more than this share is above the link: the model is the
/// link's exact payload ceiling, so only timer granularity (under 0.1 % at these sizes) and
/// rounding may exceed it.
pub const ABOVE_LINK: f64 = 1.01;
/// A bandwidth this share below the low end of the committed runs' band is low: the committed
/// H100 run's figures repeated within 1 % (data/measured/h100-80gb-hbm3-vm/README.md) and
/// PyTorch's own copy figure moved 6-8 % between runs minutes apart; a tenth is outside that.
pub const BAND_SLACK: f64 = 0.10;
/// Without a committed run to compare with, large transfers (sm in windows of 256 KiB and up,
/// ce copies of 1 MiB and up) below this share of the model are low: issue 36's target for sm.
pub const MODEL_FLOOR: f64 = 0.85;
/// A 64 B read latency this much slower than the slowest committed median is low.
pub const LATENCY_SLACK: f64 = 0.10;
/// Windows and copies from which the model floor applies without a band.
const LARGE_WINDOW: u64 = 256 << 10;
const LARGE_COPY: u32 = 1 << 20;

/// The plain word for a figure or a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Word {
    /// Neither a band nor the model floor applies: nothing to judge by.
    NoReference,
    Normal,
    Low,
    /// Faster than the link can carry: the measurement is wrong.
    AboveLink,
}

impl Word {
    pub fn as_str(self) -> &'static str {
        match self {
            Word::NoReference => "no reference",
            Word::Normal => "normal",
            Word::Low => "low",
            Word::AboveLink => "above the link",
        }
    }
}

/// Where the committed runs of the same GPU, link and engine put a figure: share of the model
/// for bandwidth, nanoseconds for latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    pub lo: f64,
    pub hi: f64,
    /// The committed runs (`<machine>/<run>`) it comes from.
    pub runs: Vec<String>,
    /// The runs measured the same test, size and window (else their own headline of the test).
    pub same_point: bool,
}

/// One headline figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// `H2D` (the GPU reads host memory, BW_RD), `D2H` (BW_WR) or `LAT_RD 64 B`.
    pub figure: &'static str,
    pub test: TestKind,
    pub size: u32,
    pub window: u64,
    /// Gb/s for bandwidth, median ns for latency.
    pub measured: f64,
    pub unit: &'static str,
    /// The model's payload bandwidth for the link and transfer (capped at the model's largest
    /// transfer, 4 KiB: larger copies split into the same TLPs); none for latency.
    pub model: Option<f64>,
    pub of_model: Option<f64>,
    pub band: Option<Band>,
    pub word: Word,
}

/// The verdict on one GPU run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub gpu: String,
    pub engine: Engine,
    /// The link the model was given (`Gen5 x16, MPS 256, MRRS 4096, 8-bit tags`).
    pub link: String,
    pub figures: Vec<Figure>,
    /// The worst word of the figures (above the link > low > normal).
    pub word: Word,
    /// What on the path explains a low figure (from `run.json`, plus what the caller found on
    /// the live path); said whatever the word.
    pub causes: Vec<String>,
    /// Where the host buffer's pages were and the GPU's node, when the run recorded them.
    pub buffer: Option<String>,
    /// Why a figure has no band, or other caveats.
    pub notes: Vec<String>,
}

/// The verdict on a GPU run directory judged against `reference` runs (normally
/// [`committed_runs`]); `None` when the run is not a GPU's or records no link. `live_causes`
/// are findings on the live path the caller adds (`check` on the GPU's hops).
pub fn verdict(run: &RunData, reference: &[RunData], live_causes: &[String]) -> Option<Verdict> {
    let info = run.info.as_ref()?;
    let engine = run.gpu_engine()?;
    let gpu = gpu_name(info)?;
    let link = info.link.as_ref()?;
    // A run is never its own reference: `bench report` on a committed run would judge it by
    // a band of itself.
    let (itself, matching): (Vec<&RunData>, Vec<&RunData>) = reference
        .iter()
        .filter(|r| same_kind(r, &gpu, engine, info))
        .partition(|r| r.info.as_ref().is_some_and(|ri| same_run(ri, info)));
    let mut figures = Vec::new();
    let mut notes: Vec<String> = itself
        .iter()
        .map(|r| format!("{} is this run: it is not its own reference", reference::run_name(r)))
        .collect();
    let mut small_copies = Vec::new();
    for (figure, test) in [("H2D", TestKind::BwRd), ("D2H", TestKind::BwWr)] {
        let Some((size, window, measured)) = headline_bw(run, engine, test, None) else {
            continue;
        };
        let model = stream(link, op(test), size.min(MAX_TRANSFER), 0)
            .ok()
            .map(|t| t.payload.0);
        let of_model = model.map(|m| measured / m);
        let band = bw_band(&matching, engine, test, size, window);
        let large = match engine {
            Engine::Sm => window >= LARGE_WINDOW,
            Engine::Ce => size >= LARGE_COPY,
        };
        if engine == Engine::Ce && !large && measured > 0.0 {
            small_copies.push(set_up_bound(figure, test, size, measured));
        }
        let word = match (of_model, &band) {
            (Some(f), _) if f > ABOVE_LINK => Word::AboveLink,
            (Some(f), Some(b)) if f < b.lo * (1.0 - BAND_SLACK) => Word::Low,
            (Some(_), Some(_)) => Word::Normal,
            (Some(f), None) if large && f < MODEL_FLOOR => Word::Low,
            (Some(_), None) if large => Word::Normal,
            _ => Word::NoReference,
        };
        figures.push(Figure {
            figure,
            test,
            size,
            window,
            measured,
            unit: "Gb/s",
            model,
            of_model,
            band,
            word,
        });
    }
    if let Some((window, measured)) = lat_rd_64(run) {
        let medians: Vec<f64> = matching.iter().filter_map(|r| lat_rd_64(r).map(|l| l.1)).collect();
        let band = (!medians.is_empty()).then(|| Band {
            lo: medians.iter().cloned().fold(f64::INFINITY, f64::min),
            hi: medians.iter().cloned().fold(0.0, f64::max),
            runs: matching
                .iter()
                .filter(|r| lat_rd_64(r).is_some())
                .map(|r| reference::run_name(r))
                .collect(),
            same_point: true,
        });
        let word = match &band {
            Some(b) if measured > b.hi * (1.0 + LATENCY_SLACK) => Word::Low,
            Some(_) => Word::Normal,
            None => Word::NoReference,
        };
        figures.push(Figure {
            figure: "LAT_RD 64 B",
            test: TestKind::LatRd,
            size: 64,
            window,
            measured,
            unit: "ns",
            model: None,
            of_model: None,
            band,
            word,
        });
    }
    if matching.is_empty() {
        notes.push(format!(
            "no {}committed run of a {gpu} on Gen{} x{} with engine {engine} in data/measured/: bandwidth is judged against {:.0} % of the model (large transfers only), latency not at all",
            if itself.is_empty() { "" } else { "other " },
            link.gen,
            link.lanes,
            MODEL_FLOOR * 100.0
        ));
    }
    notes.extend(small_copies);
    let mut causes = path_causes(info);
    causes.extend(live_causes.iter().cloned());
    let word = figures.iter().map(|f| f.word).max().unwrap_or(Word::NoReference);
    Some(Verdict {
        gpu,
        engine,
        link: format!(
            "Gen{} x{}, MPS {}, MRRS {}, {}-bit tags",
            link.gen, link.lanes, link.mps, link.mrrs, link.tag_bits
        ),
        figures,
        word,
        causes,
        buffer: buffer_line(info),
        notes,
    })
}

/// Why a small copy's figure says little about the link: the time one copy took, which at
/// these sizes is the copy engine's and the driver's set-up (the committed H100 run: 2 KiB
/// copies at 6.6 Gb/s, one every 2.5 µs, where the link would carry one in 37 ns).
fn set_up_bound(figure: &str, test: TestKind, size: u32, gbps: f64) -> String {
    let test_name = if test == TestKind::BwWr { "BW_WR" } else { "BW_RD" };
    format!(
        "{figure} by the copy engines at {size} B is one copy every {:.2} µs: copies under 1 MiB are bound by each copy's set-up, not by the link; for the link's figure run --engine ce --test {test_name} --size 2M --window 64M",
        f64::from(size) * 8.0 / gbps / 1e3
    )
}

/// The same run loaded twice (a committed run reported from its directory): same start, same
/// command.
fn same_run(a: &RunInfo, b: &RunInfo) -> bool {
    a.start_time == b.start_time && a.command_line == b.command_line
}

fn op(test: TestKind) -> Op {
    if test == TestKind::BwWr {
        Op::Wr
    } else {
        Op::Rd
    }
}

fn link_of(r: &RunData) -> Option<&pcie_model::LinkConfig> {
    r.info.as_ref()?.link.as_ref()
}

fn device(info: &RunInfo) -> Option<&serde_json::Value> {
    info.backend.description.get("device")
}

fn gpu_name(info: &RunInfo) -> Option<String> {
    Some(device(info)?.get("name")?.as_str()?.to_string())
}

/// A reference run of the same GPU model, link generation and width, and engine.
fn same_kind(r: &RunData, gpu: &str, engine: Engine, info: &RunInfo) -> bool {
    let (Some(ri), Some(link)) = (r.info.as_ref(), info.link.as_ref()) else {
        return false;
    };
    ri.link
        .as_ref()
        .is_some_and(|l| l.gen == link.gen && l.lanes == link.lanes)
        && gpu_name(ri).as_deref() == Some(gpu)
        && r.gpu_engine() == Some(engine)
}

/// The test's figure at the largest size measured, then the largest window at that size (the
/// best of the patterns and cache states there); or at `at` (size, window) when given. For sm,
/// windows of [`SM_MIN_WINDOW`] and up where the run has any: smaller ones put every thread
/// on a few host cache lines (data/measured/h100-80gb-hbm3-vm/README.md).
fn headline_bw(run: &RunData, engine: Engine, test: TestKind, at: Option<(u32, u64)>) -> Option<(u32, u64, f64)> {
    let rows: Vec<_> = run
        .files
        .iter()
        .filter_map(|f| match &f.data {
            ResultData::Bandwidth(rows) => Some(rows.iter()),
            _ => None,
        })
        .flatten()
        .filter(|r| r.key.test == test)
        .collect();
    let large = engine == Engine::Sm && rows.iter().any(|r| r.key.window >= SM_MIN_WINDOW);
    let mut best: Option<(u32, u64, f64)> = None;
    for r in rows.into_iter().filter(|r| !large || r.key.window >= SM_MIN_WINDOW) {
        let k = (r.key.size, r.key.window);
        if at.is_some_and(|a| a != k) {
            continue;
        }
        best = match best {
            Some(b) if (b.0, b.1) > k || ((b.0, b.1) == k && b.2 >= r.bw_gbps) => Some(b),
            _ => Some((k.0, k.1, r.bw_gbps)),
        };
    }
    best
}

/// The reference runs' share of their model for `test`: at the same size and window where all
/// measured it, else at each one's own headline. A reference figure above the link is a
/// measurement problem, not a band.
fn bw_band(matching: &[&RunData], engine: Engine, test: TestKind, size: u32, window: u64) -> Option<Band> {
    let share = |r: &RunData, at| {
        let (s, _, bw) = headline_bw(r, engine, test, at)?;
        let share = bw / stream(link_of(r)?, op(test), s.min(MAX_TRANSFER), 0).ok()?.payload.0;
        (share <= ABOVE_LINK).then_some(share)
    };
    let same: Vec<_> = matching.iter().map(|r| share(r, Some((size, window)))).collect();
    let same_point = !same.is_empty() && same.iter().all(Option::is_some);
    let shares: Vec<(String, f64)> = matching
        .iter()
        .zip(same)
        .filter_map(|(r, s)| Some((reference::run_name(r), if same_point { s? } else { share(r, None)? })))
        .collect();
    if shares.is_empty() {
        return None;
    }
    Some(Band {
        lo: shares.iter().map(|s| s.1).fold(f64::INFINITY, f64::min),
        hi: shares.iter().map(|s| s.1).fold(0.0, f64::max),
        runs: shares.into_iter().map(|s| s.0).collect(),
        same_point,
    })
}

/// LAT_RD of 64 B: the median of the row in the smallest window (the cache-resident case
/// every suite measures), and that window.
fn lat_rd_64(run: &RunData) -> Option<(u64, f64)> {
    run.files
        .iter()
        .filter_map(|f| match &f.data {
            ResultData::Latency(rows) => Some(rows.iter()),
            _ => None,
        })
        .flatten()
        .filter(|r| r.key.test == TestKind::LatRd && r.key.size == 64 && r.key.host_offset == 0)
        .map(|r| (r.key.window, r.med_ns))
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)))
}

/// What `run.json` says about the path that would lower a figure.
fn path_causes(info: &RunInfo) -> Vec<String> {
    let mut causes = Vec::new();
    let Some(d) = device(info) else { return causes };
    let pci = d.get("pci");
    let field = |k: &str| pci.and_then(|p| p.get(k)).filter(|v| !v.is_null());
    let (speed, max_speed) = (field("current_link_speed"), field("max_link_speed"));
    let (width, max_width) = (field("current_link_width"), field("max_link_width"));
    if speed != max_speed || width != max_width {
        if let (Some(s), Some(ms), Some(w), Some(mw)) = (speed, max_speed, width, max_width) {
            causes.push(format!(
                "downgraded link: the GPU ran at {} x{w} of {} x{mw} while busy",
                s.as_str().unwrap_or("?"),
                ms.as_str().unwrap_or("?")
            ));
        }
    }
    if let (Some(mps), Some(sup)) = (
        field("mps").and_then(|v| v.as_u64()),
        field("mps_supported").and_then(|v| v.as_u64()),
    ) {
        if mps < sup {
            causes.push(format!(
                "MPS {mps} below the {sup} the GPU supports (set by the host on the whole path)"
            ));
        }
    }
    if let Some(b) = d.get("host_buffer") {
        let gpu = b.get("gpu_node").and_then(|v| v.as_u64());
        let nodes = b.get("pages").and_then(|p| p.get("nodes")).and_then(|n| n.as_object());
        if let (Some(gpu), Some(nodes)) = (gpu, nodes) {
            let far: u64 = nodes
                .iter()
                .filter(|(n, _)| n.parse() != Ok(gpu))
                .filter_map(|(_, c)| c.as_u64())
                .sum();
            let all: u64 = nodes.values().filter_map(|c| c.as_u64()).sum();
            if far > 0 {
                causes.push(format!(
                    "far NUMA node: {far} of {all} sampled host buffer pages are off the GPU's node {gpu}"
                ));
            }
        }
    }
    causes
}

/// The host buffer's placement as recorded (runs before issue 36 have none).
fn buffer_line(info: &RunInfo) -> Option<String> {
    let b = device(info)?.get("host_buffer")?;
    let node = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_u64()).map_or("none".to_string(), |n| n.to_string());
    let pages = b.get("pages")?;
    let nodes = pages
        .get("nodes")
        .and_then(|n| n.as_object())
        .map(|n| {
            n.iter()
                .map(|(k, v)| format!("node {k}: {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Some(format!(
        "host buffer pages sampled {} ({}), bound to node {}, GPU on node {}{}",
        pages.get("pages_sampled").and_then(|v| v.as_u64()).unwrap_or(0),
        if nodes.is_empty() {
            "no node read".to_string()
        } else {
            nodes
        },
        node(b.get("bound_node")),
        node(b.get("gpu_node")),
        pages
            .get("error")
            .and_then(|e| e.as_str())
            .map_or(String::new(), |e| format!("; {e}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(name: &str) -> RunData {
        committed_runs()
            .into_iter()
            .find(|r| reference::run_name(r) == name)
            .unwrap()
    }

    /// The run with every bandwidth figure scaled by `k`.
    fn scaled(mut run: RunData, k: f64) -> RunData {
        for f in &mut run.files {
            if let ResultData::Bandwidth(rows) = &mut f.data {
                rows.iter_mut().for_each(|r| r.bw_gbps *= k);
            }
        }
        run
    }

    fn figure<'a>(v: &'a Verdict, name: &str) -> &'a Figure {
        v.figures.iter().find(|f| f.figure == name).unwrap()
    }

    /// The run as another run of the same GPU would be: a later start.
    fn another(mut run: RunData) -> RunData {
        run.info.as_mut().unwrap().start_time.push_str(" (another run)");
        run
    }

    #[test]
    fn the_committed_ce_run_is_not_its_own_reference_and_its_small_copies_say_why() {
        let v = verdict(&committed("h100-80gb-hbm3-vm/quick-ce"), &committed_runs(), &[]).unwrap();
        // Its only band would be itself; its 2 KiB copies are under the 1 MiB floor.
        assert_eq!(v.word, Word::NoReference, "{v:?}");
        assert_eq!(v.link, "Gen5 x16, MPS 256, MRRS 4096, 8-bit tags");
        let h2d = figure(&v, "H2D");
        // quick-ce's largest BW_RD: 2048 B in its 8 KiB window, 6.589 Gb/s of the model's 446.9.
        assert_eq!((h2d.size, h2d.window), (2048, 8192));
        assert!(
            (h2d.measured - 6.589).abs() < 0.001 && (h2d.model.unwrap() - 446.86).abs() < 0.01,
            "{h2d:?}"
        );
        assert!(h2d.band.is_none(), "{h2d:?}");
        assert_eq!(
            v.notes[0],
            "h100-80gb-hbm3-vm/quick-ce is this run: it is not its own reference"
        );
        // 2048 B x 8 / 6.589 Gb/s = 2.49 µs a copy.
        assert!(
            v.notes[1].starts_with("no other committed run of a NVIDIA H100"),
            "{:?}",
            v.notes
        );
        assert!(
            v.notes[2].starts_with("H2D by the copy engines at 2048 B is one copy every 2.49 µs: copies under 1 MiB are bound by each copy's set-up"),
            "{:?}",
            v.notes
        );
        assert!(v.causes.is_empty() && v.buffer.is_none(), "{v:?}");
        // Another run of the same GPU is judged by the committed one's band, at the same point.
        let v = verdict(
            &another(committed("h100-80gb-hbm3-vm/quick-ce")),
            &committed_runs(),
            &[],
        )
        .unwrap();
        assert_eq!(v.word, Word::Normal, "{v:?}");
        let band = figure(&v, "H2D").band.as_ref().unwrap();
        assert_eq!(
            (band.runs.clone(), band.same_point),
            (vec!["h100-80gb-hbm3-vm/quick-ce".to_string()], true)
        );
    }

    #[test]
    fn the_committed_sm_run_has_its_8k_window_write_above_the_link() {
        // README: quick-sm's BW_WR 2048 B in an 8 KiB window reads 620.3 Gb/s, 139 % of the model.
        let v = verdict(&committed("h100-80gb-hbm3-vm/quick-sm"), &committed_runs(), &[]).unwrap();
        assert_eq!(v.word, Word::AboveLink);
        let d2h = figure(&v, "D2H");
        assert_eq!((d2h.word, d2h.window), (Word::AboveLink, 8192));
        assert!((d2h.of_model.unwrap() - 1.388).abs() < 0.001, "{d2h:?}");
        assert!(d2h.band.is_none(), "a figure above the link makes no band");
        // Reads: the window sweep's 64 B rows in windows of 256 KiB and up are the headline.
        let h2d = figure(&v, "H2D");
        assert!(
            h2d.size == 64 && h2d.window >= SM_MIN_WINDOW && h2d.word == Word::Normal,
            "{h2d:?}"
        );
        // Its own latency is no reference for itself.
        let lat = figure(&v, "LAT_RD 64 B");
        assert_eq!((lat.unit, lat.word), ("ns", Word::NoReference));
        assert!((lat.measured - 1229.2).abs() < 0.1, "{lat:?}");
    }

    #[test]
    fn a_slow_run_is_low_with_the_callers_causes_and_a_fast_one_above_the_link() {
        let refs = committed_runs();
        let ce = another(committed("h100-80gb-hbm3-vm/quick-ce"));
        let slow = verdict(&scaled(ce.clone(), 0.8), &refs, &["hop 0000:00:01.0 at Gen4".into()]).unwrap();
        assert_eq!(slow.word, Word::Low);
        assert_eq!(slow.causes, vec!["hop 0000:00:01.0 at Gen4".to_string()]);
        assert!(slow.figures.iter().all(|f| f.word == Word::Low), "{slow:?}");
        // 0.92 of the band is inside the slack.
        assert_eq!(
            verdict(&scaled(ce.clone(), 0.92), &refs, &[]).unwrap().word,
            Word::Normal
        );
        let fast = verdict(&scaled(ce, 100.0), &refs, &[]).unwrap();
        assert_eq!(fast.word, Word::AboveLink);
        assert_eq!(figure(&fast, "H2D").word, Word::AboveLink);
    }

    #[test]
    fn without_a_matching_committed_run_it_says_so() {
        let ce = committed("h100-80gb-hbm3-vm/quick-ce");
        let v = verdict(&ce, &[], &[]).unwrap();
        assert!(
            v.notes[0].starts_with("no committed run of a NVIDIA H100 80GB HBM3 on Gen5 x16 with engine ce"),
            "{:?}",
            v.notes
        );
        // quick's copies stop at 2 KiB, below the floor's 1 MiB: nothing to judge by.
        assert_eq!(v.word, Word::NoReference);
        assert!(v.figures.iter().all(|f| f.band.is_none()));
    }

    #[test]
    fn causes_and_buffer_come_from_run_json() {
        let mut run = committed("h100-80gb-hbm3-vm/quick-ce");
        let device = run
            .info
            .as_mut()
            .unwrap()
            .backend
            .description
            .get_mut("device")
            .unwrap();
        device["pci"]["current_link_speed"] = "16.0 GT/s PCIe".into();
        device["pci"]["mps"] = 128.into();
        device["host_buffer"] = serde_json::json!({
            "bound_node": 1, "gpu_node": 0, "pages": {"pages_sampled": 64, "nodes": {"1": 64}}
        });
        let v = verdict(&run, &committed_runs(), &[]).unwrap();
        assert_eq!(
            v.causes,
            vec![
                "downgraded link: the GPU ran at 16.0 GT/s PCIe x16 of 32.0 GT/s PCIe x16 while busy".to_string(),
                "MPS 128 below the 256 the GPU supports (set by the host on the whole path)".to_string(),
                "far NUMA node: 64 of 64 sampled host buffer pages are off the GPU's node 0".to_string(),
            ]
        );
        assert_eq!(
            v.buffer.as_deref(),
            Some("host buffer pages sampled 64 (node 1: 64), bound to node 1, GPU on node 0")
        );
    }
}
