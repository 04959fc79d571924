//! Renders a saw-tooth bandwidth chart like `pcieperf model bw --plot` to the path in argv[1], for
//! eyeballing layout changes: `cargo run -p pcie-report --example sawtooth -- /tmp/bw.svg`.

use pcie_report::{Axis, Chart, Point, Series};

/// y = peak · s / (s + overhead · ⌈s / 256⌉): one header of `overhead` bytes per 256 B packet.
fn curve(peak: f64, overhead: f64, mps: f64) -> Vec<Point> {
    (1..=4096)
        .map(|s| {
            let s = f64::from(s);
            Point::new(s, peak * s / (s + overhead * (s / mps).ceil()))
        })
        .collect()
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: sawtooth OUT.svg");
        std::process::exit(2);
    };
    let chart = Chart {
        title: "Effective PCIe bandwidth, Gen3 x8, MPS 256 B, MRRS 512 B".into(),
        x: Axis::linear("Transfer size (B)").with_range(0.0, 4096.0),
        y: Axis::linear("Effective bandwidth (Gb/s)"),
        series: vec![
            Series::line("Write (MWr)", curve(57.0, 24.0, 256.0)),
            Series::line("Read (MRd + CplD)", curve(54.0, 28.0, 256.0)),
            Series::line("Read/write (50:50)", curve(50.0, 36.0, 256.0)),
            Series::reference("40GbE line rate", vec![Point::new(0.0, 40.0), Point::new(4096.0, 40.0)]),
        ],
    };
    let svg = chart.to_svg();
    if let Err(e) = std::fs::write(&path, svg) {
        eprintln!("sawtooth: cannot write {path}: {e}");
        std::process::exit(1);
    }
}
