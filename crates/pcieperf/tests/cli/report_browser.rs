//! `bench report` pages as a user sees them: opened in headless Chromium, with no console
//! errors, every expected chart present with its series drawn (non-empty boxes in the browser's
//! layout, not just in the markup) and one legend entry per series, and a screenshot kept in
//! the target directory for people to look at.
//!
//! Needs `chromium` (or `$CHROMIUM`); skipped with a message when it is missing, except under
//! CI, which installs it.

use crate::common;
use common::pcieperf;

use std::path::Path;
use std::process::Command;

const SUPERMICRO: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro";
const IOMMU_NOSP: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp";

/// Appended to a copy of the page: reports what the browser laid out, as JSON in `#probe`.
const PROBE: &str = r#"<script>
(() => {
  const drawn = el => { const b = el.getBBox(); return b.width > 0 || b.height > 0; };
  const charts = [...document.querySelectorAll('section.chart')].map(s => {
    const svg = s.querySelector('svg');
    const series = [...s.querySelectorAll('g.series')];
    return {
      id: s.id,
      width: svg ? svg.getBoundingClientRect().width : 0,
      series: series.length,
      drawn: series.filter(drawn).length,
      legend: s.querySelectorAll('g.legend-entry').length,
    };
  });
  const tables = [...document.querySelectorAll('section.table')].map(s => ({ id: s.id, rows: s.querySelectorAll('tbody tr').length }));
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify({ charts, tables });
  document.body.appendChild(pre);
})();
</script>"#;

fn chromium() -> Option<String> {
    let candidates = std::env::var("CHROMIUM")
        .into_iter()
        .chain(["chromium", "chromium-browser", "google-chrome"].map(String::from));
    for c in candidates {
        if Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(c);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must install chromium (apt-get install -y chromium)"
    );
    eprintln!("skipped: no chromium (set CHROMIUM=/path/to/chrome or apt-get install chromium)");
    None
}

fn reference(name: &str) -> String {
    common::reference(name).to_string_lossy().into_owned()
}

fn headless(browser: &str, args: &[&str]) -> std::process::Output {
    // `timeout` ends a browser that hangs instead of the test.
    Command::new("timeout")
        .args([
            "120",
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--enable-logging=stderr", "--v=0"])
        .args(args)
        .output()
        .expect("chromium runs")
}

/// What the browser made of one page.
struct Page {
    charts: Vec<serde_json::Value>,
    tables: Vec<serde_json::Value>,
}

impl Page {
    fn chart(&self, id: &str) -> &serde_json::Value {
        self.charts
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no chart {id}"))
    }
}

/// Opens `html` in the browser: asserts no console message, saves a screenshot as `<name>.png`
/// in the target directory, and returns the probe's findings.
fn open(browser: &str, html: &Path, name: &str) -> Page {
    let probed = html.with_extension("probe.html");
    let text = std::fs::read_to_string(html).unwrap();
    std::fs::write(&probed, text.replace("</body>", &format!("{PROBE}\n</body>"))).unwrap();
    let url = format!("file://{}", probed.display());
    let o = headless(browser, &["--dump-dom", &url]);
    assert!(
        o.status.success(),
        "chromium failed on {name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Our pages have no scripts, so any console line (an SVG attribute the browser cannot parse,
    // a resource it tried to fetch) is a defect.
    let log = String::from_utf8_lossy(&o.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{name}: console messages:\n{}", console.join("\n"));
    let dom = String::from_utf8(o.stdout).unwrap();
    let json = dom
        .split("<pre id=\"probe\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("{name}: the probe did not run"))
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join(format!("{name}.png"));
    let shot = format!("--screenshot={}", png.display());
    let o = headless(
        browser,
        &[&shot, "--window-size=1100,2400", &format!("file://{}", html.display())],
    );
    assert!(o.status.success(), "screenshot of {name}");
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{name}: {} bytes",
        bytes.len()
    );
    eprintln!("screenshot: {}", png.display());

    let page = Page {
        charts: v["charts"].as_array().unwrap().clone(),
        tables: v["tables"].as_array().unwrap().clone(),
    };
    for c in &page.charts {
        assert!(c["width"].as_f64().unwrap() > 500.0, "{name}: {c}");
        assert_eq!(c["drawn"], c["series"], "{name}: a series has nothing on screen: {c}");
        assert_eq!(c["legend"], c["series"], "{name}: one legend entry per series: {c}");
    }
    page
}

fn report(args: &[&str], html: &Path) {
    let mut v = vec!["bench", "report"];
    v.extend_from_slice(args);
    v.extend(["--html", html.to_str().unwrap()]);
    let o = pcieperf(&v);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn reports_render_in_a_browser() {
    let Some(browser) = chromium() else { return };
    let dir = common::scratch_dir("browser-pages");

    // Both pcie-bench directories: 34 charts each, with the paper's figures.
    for (name, short) in [(SUPERMICRO, "supermicro"), (IOMMU_NOSP, "supermicro-iommu-nosp")] {
        let html = dir.join(format!("{short}.html"));
        report(&[&reference(name)], &html);
        let p = open(&browser, &html, short);
        assert_eq!(p.charts.len(), 34, "{short}");
        let expected = [
            ("bw_dma_sz_sweep", 7),
            ("lat_dma_sizes", 2),
            ("lat_dma_details_cdf", 16),
            ("bw_dma_win_sweep_rd_rnd_64", 4),
            ("lat_dma_sweep_rd_rnd_64", 4),
            ("bw_dma_off_rd_host", 7),
            ("lat_dma_off_rd_device", 7),
        ];
        for (id, series) in expected {
            assert_eq!(p.chart(id)["series"], series, "{short} {id}");
        }
    }

    // A simulator run of the quick suite, and the same run compared with pcie-bench's.
    let run = dir.join("run");
    let o = pcieperf(&["bench", "run", "--samples", "2000", "--out", run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = dir.join("sim.html");
    report(&[run.to_str().unwrap()], &html);
    let p = open(&browser, &html, "sim-quick");
    assert_eq!(p.charts.len(), 7);
    assert_eq!(p.chart("bw_dma_sz_sweep")["series"], 7);
    assert_eq!(p.chart("lat_dma_details_cdf")["series"], 8);

    let html = dir.join("compare.html");
    report(&[&reference(SUPERMICRO), "--compare", run.to_str().unwrap()], &html);
    let p = open(&browser, &html, "compare");
    assert_eq!(p.charts.len(), 34);
    assert_eq!(p.chart("bw_dma_sz_sweep")["series"], 10);
    assert_eq!(p.chart("lat_dma_details_cdf")["series"], 24);
    let ids: Vec<&str> = p.tables.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["compare-B-summary", "compare-B-cdf", "compare-B-points"]);
    assert!(p.tables.iter().all(|t| t["rows"].as_u64().unwrap() > 0));
    std::fs::remove_dir_all(&dir).unwrap();
}
