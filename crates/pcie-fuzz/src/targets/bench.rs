//! Targets for pcie-bench's parsers: byte sizes, suites, exec-protocol lines, result CSVs.

use crate::{refused, text, Target, Verdict};

/// `8k`, `1.5M`, `64M`: windows on the command line and in suites.
fn bytes(input: &[u8]) -> Verdict {
    let s = text(input);
    match pcie_bench::parse_bytes(&s) {
        Ok(_) => Verdict::Accepted,
        Err(e) => refused(e.to_string()),
    }
}

pub fn targets() -> Vec<Target> {
    vec![Target::new(
        "bytes",
        &["8k", "64M", "1.5M", "4096", "2G", "512"],
        &["k", "K", "M", "G", "T", "KiB", "MB", ".", " "],
        bytes,
    )]
}
