//! The charts of a recorded monitor run (`pmu record --svg/--html`): every root port's payload
//! Gb/s over time in one chart, and a page with one chart per root port (or event) against its
//! link's model bandwidth, with mean and peak, drawn with pcie-report.

use crate::history::History;
use crate::monitor::{Port, Target};
use pcie_report::{Axis, Chart, Point, Report, Section, Series};

/// Payload targets draw Rx and Tx Gb/s; others their count rate.
fn series(h: &History, prefix: &str) -> Vec<Series> {
    let line = |name: &str, f: &dyn Fn(&Target) -> Option<f64>| {
        let pts: Vec<Point> = h
            .points
            .iter()
            .filter_map(|(t, v)| f(v).map(|y| Point::new(*t, y)))
            .collect();
        (!pts.is_empty()).then(|| Series::line(format!("{prefix}{name}"), pts))
    };
    let payload: Vec<Series> = [line("Rx", &|v| v.rx_gbps), line("Tx", &|v| v.tx_gbps)]
        .into_iter()
        .flatten()
        .collect();
    if payload.is_empty() {
        line("count rate", &|v| v.rate).into_iter().collect()
    } else {
        payload
    }
}

fn time_axis() -> Axis {
    Axis::linear("Time since start (s)")
}

/// Rates start at zero, so a flat line at 1 G reads as flat.
fn rate_axis(payload: bool) -> Axis {
    Axis {
        min: Some(0.0),
        ..Axis::linear(if payload { "Payload (Gb/s)" } else { "Events per second" })
    }
}

/// All root ports in one chart (or, with no payload event, every event's count rate).
pub fn overview(history: &[History]) -> Chart {
    let payload = history.iter().any(History::is_payload);
    let series = history
        .iter()
        .filter(|h| h.is_payload() == payload)
        .flat_map(|h| series(h, &format!("{} ", h.target.name)))
        .collect();
    Chart {
        title: if payload {
            "PCIe payload bandwidth per root port".into()
        } else {
            "Event rates".into()
        },
        x: time_axis(),
        y: rate_axis(payload),
        series,
    }
}

/// One section per root port (or event) with the link's model bandwidth for reference.
pub fn report(history: &[History], ports: &[Port], secs: f64) -> Report {
    let mut sections = Vec::new();
    for (i, h) in history.iter().enumerate() {
        let mut series = series(h, "");
        let mut notes = Vec::new();
        let model = ports.iter().find(|p| p.name == h.target.name).and_then(|p| p.model);
        let span = |y: f64| vec![Point::new(0.0, y), Point::new(secs, y)];
        if let (Some(m), true) = (model, h.is_payload()) {
            series.push(Series::reference(
                format!("model Rx {:.1} Gb/s", m.rx_gbps),
                span(m.rx_gbps),
            ));
            series.push(Series::reference(
                format!("model Tx {:.1} Gb/s", m.tx_gbps),
                span(m.tx_gbps),
            ));
        }
        let stats = |name: &str, unit: &str, f: &dyn Fn(&Target) -> Option<f64>| {
            h.mean_peak(f).map(|(mean, peak, n)| {
                format!("{name}: mean {mean:.3} {unit}, peak {peak:.3} {unit} over {n} intervals")
            })
        };
        notes.extend(stats("Rx", "Gb/s", &|t| t.rx_gbps));
        notes.extend(stats("Tx", "Gb/s", &|t| t.tx_gbps));
        if !h.is_payload() {
            notes.extend(stats("Rate", "/s", &|t| t.rate));
        }
        if let Some(l) = &h.target.link {
            notes.push(format!("Link: {l}; model bandwidth is the pcie-model payload rate of 4 KB DMA writes (Rx) and reads (Tx) at MPS 256."));
        }
        sections.push(Section {
            id: format!("t{i}"),
            heading: format!("{} ({})", h.target.name, h.target.pmus),
            chart: Chart {
                title: h.target.name.clone(),
                x: time_axis(),
                y: rate_axis(h.is_payload()),
                series,
            },
            notes,
        });
    }
    Report {
        title: "pcieperf pmu record".into(),
        description: vec![format!(
            "{} root port{} or event{} over {secs:.3} s, one chart each; the values are the recorded rows summed per root port.",
            history.len(),
            if history.len() == 1 { "" } else { "s" },
            if history.len() == 1 { "" } else { "s" },
        )],
        tables: vec![],
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::dwc_payload_monitor;

    #[test]
    fn charts_show_rx_and_tx_per_root_port_against_the_link_model() {
        let (_tree, mut mon, mut src) = dwc_payload_monitor("history-charts");
        mon.refresh(&mut src).unwrap();
        let mut history = Vec::new();
        for i in 1..=3 {
            let rows = mon.sample(&mut src, 0.1 * i as f64, 0.1).unwrap();
            History::record(&mut history, 0.1 * i as f64, mon.targets(&rows));
        }
        let svg = overview(&history).to_svg();
        assert!(svg.contains("data-name=\"0000:30:03.0 Rx\"") && svg.contains("data-name=\"0000:30:03.0 Tx\""));
        assert!(svg.contains("Payload (Gb/s)"));
        let html = report(&history, &mon.ports, 0.3).to_html();
        let model = mon.ports[0].model.unwrap();
        assert!(html.contains(&format!("model Rx {:.1} Gb/s", model.rx_gbps)), "{html}");
        // 1e6 counts per read, running half the time, 1 B each, per 0.1 s: 0.16 Gb/s.
        assert!(
            html.contains("Rx: mean 0.160 Gb/s, peak 0.160 Gb/s over 3 intervals"),
            "{html}"
        );
        assert!(html.contains("32.0 GT/s PCIe x16"), "{html}");
    }
}
