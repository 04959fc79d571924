//! The verdict of a GPU run (pcie-bench's `verdict`) as `bench run` and `bench report` print
//! it: a table of the headline figures, the word, the causes and the buffer's node; the same
//! in CSV (one row per figure, the run-wide facts repeated) and JSON.

use crate::output::{Cell, Table};
use pcie_bench::{committed_runs, verdict, RunData, Verdict, Word};
use std::path::Path;

/// The verdict on `run` against the committed runs; `None` for a run that is not a GPU's.
pub fn judge(run: &RunData, live_causes: &[String]) -> Option<Verdict> {
    verdict(run, &committed_runs(), live_causes)
}

/// What `check` finds on the live path of the GPU `run` measured (its function's findings:
/// a downgraded hop, MPS or MRRS below the path's, no NUMA node, power state), one line each.
pub fn live_causes(root: &Path, run: &RunData) -> Vec<String> {
    let bdf = run.info.as_ref().and_then(|i| {
        i.backend
            .description
            .get("device")?
            .get("pci")?
            .get("bdf")?
            .as_str()
            .map(String::from)
    });
    let (Some(bdf), Ok(report)) = (bdf, pcie_health::check(root, &pcie_health::Options::default())) else {
        return Vec::new();
    };
    report
        .findings
        .iter()
        .filter(|f| f.bdf.to_string() == bdf)
        .map(|f| format!("check: {} ({})", f.message, f.kind.name()))
        .collect()
}

/// Run-wide facts repeated on every CSV row, so the CSV carries all the table and its lines show.
fn facts(v: &Verdict) -> [(&'static str, String); 7] {
    [
        ("gpu", v.gpu.clone()),
        ("engine", v.engine.to_string()),
        ("link", v.link.clone()),
        ("verdict", v.word.as_str().to_string()),
        ("causes", v.causes.join("; ")),
        ("buffer", v.buffer.clone().unwrap_or_default()),
        ("notes", v.notes.join("; ")),
    ]
}

/// The figures, each row led by `lead` (the run-wide facts in CSV, nothing for people).
fn table(v: &Verdict, lead: &[(&'static str, String)]) -> Table {
    let mut columns: Vec<(&str, &str)> = lead.iter().map(|(k, _)| (*k, *k)).collect();
    columns.extend([
        ("figure", "Figure"),
        ("size", "Size"),
        ("window", "Window"),
        ("measured", "Measured"),
        ("unit", "Unit"),
        ("model", "Model"),
        ("of_model_pct", "Of model %"),
        ("band_lo", "Band low"),
        ("band_hi", "Band high"),
        ("band_runs", "Band from"),
        ("word", "Word"),
    ]);
    let mut t = Table::new(&columns);
    for f in &v.figures {
        let band = f.band.as_ref();
        // Bandwidth bands are shares of the model (printed in %), latency bands nanoseconds.
        let scale = if f.model.is_some() { 100.0 } else { 1.0 };
        let mut row: Vec<Cell> = lead.iter().map(|(_, value)| Cell::text(value)).collect();
        row.extend([
            Cell::text(f.figure),
            Cell::Int(f.size as u64),
            Cell::Int(f.window),
            Cell::num(f.measured, 1),
            Cell::text(f.unit),
            f.model.map_or(Cell::Empty, |m| Cell::num(m, 1)),
            f.of_model.map_or(Cell::Empty, |x| Cell::num(x * 100.0, 1)),
            band.map_or(Cell::Empty, |b| Cell::num(b.lo * scale, 1)),
            band.map_or(Cell::Empty, |b| Cell::num(b.hi * scale, 1)),
            band.map_or(Cell::text("none"), |b| {
                Cell::text(format!(
                    "{}{}",
                    b.runs.join(" "),
                    if b.same_point { "" } else { " (own headline)" }
                ))
            }),
            Cell::text(f.word.as_str()),
        ]);
        t.push(row);
    }
    t
}

/// One row per figure with the run-wide facts.
pub fn csv(v: &Verdict) -> String {
    table(v, &facts(v)).to_csv()
}

/// For people: the word, the figures, then the causes, the buffer and the notes.
pub fn text(v: &Verdict) -> String {
    let mut s = format!(
        "\nVerdict for {} (engine {}, {}): {}\n",
        v.gpu,
        v.engine,
        v.link,
        v.word.as_str()
    );
    s.push_str(&table(v, &[]).to_human());
    if v.causes.is_empty() && v.word == Word::Low {
        s.push_str("  cause: none found on the path\n");
    }
    for c in &v.causes {
        s.push_str(&format!("  cause: {c}\n"));
    }
    if let Some(b) = &v.buffer {
        s.push_str(&format!("  {b}\n"));
    }
    for n in &v.notes {
        s.push_str(&format!("  note: {n}\n"));
    }
    s
}
