//! AER counters as the kernel's sysfs files show them: `aer_dev_correctable`,
//! `aer_dev_nonfatal`, `aer_dev_fatal` (one `Name count` line per error type, then a
//! `TOTAL_ERR_*` line) and a root port's `aer_rootport_total_err_cor`/`_fatal`/`_nonfatal`
//! (one number: errors reported to it from below).

use serde::Serialize;

/// The counts of one `aer_dev_*` file, in the file's order; `total` from its `TOTAL_ERR_*`
/// line, or the sum where the line is missing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct AerCounts {
    pub types: Vec<(String, u64)>,
    pub total: u64,
}

/// The most lines an AER file is read for (the kernel writes at most 17).
const MAX_LINES: usize = 64;

impl AerCounts {
    /// Reads a file's text; `Err` names the first line that is not `Name count`.
    pub fn parse(text: &str) -> Result<AerCounts, String> {
        let mut counts = AerCounts::default();
        let mut total = None;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()).take(MAX_LINES) {
            let mut words = line.split_whitespace();
            let (Some(name), Some(n), None) = (words.next(), words.next(), words.next()) else {
                return Err(format!("{:?}: expected an error name and a count", cut(line)));
            };
            let Ok(n) = n.parse::<u64>() else {
                return Err(format!("{:?}: the count is not a whole number", cut(line)));
            };
            if name.starts_with("TOTAL_") {
                total = Some(n);
            } else {
                counts.types.push((name.to_string(), n));
            }
        }
        counts.total = total.unwrap_or_else(|| counts.types.iter().fold(0u64, |a, (_, n)| a.saturating_add(*n)));
        Ok(counts)
    }
}

fn cut(line: &str) -> String {
    line.chars().take(60).collect()
}

/// A function's AER files; `None` where a file does not exist, `Err` with the reason where it
/// exists but says nothing readable.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AerFiles {
    pub correctable: Option<Result<AerCounts, String>>,
    pub nonfatal: Option<Result<AerCounts, String>>,
    pub fatal: Option<Result<AerCounts, String>>,
    /// A root port's totals of errors reported from below: correctable, non-fatal, fatal.
    pub rootport: Option<[Option<u64>; 3]>,
}

#[cfg(test)]
mod tests {
    use super::AerCounts;

    #[test]
    fn the_kernels_aer_file() {
        let text = "RxErr 3\nBadTLP 0\nBadDLLP 212\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 215\n";
        let c = AerCounts::parse(text).unwrap();
        assert_eq!(c.total, 215);
        assert_eq!(c.types[2], ("BadDLLP".to_string(), 212));
        assert_eq!(AerCounts::parse("RxErr 1\nBadTLP 2\n").unwrap().total, 3);
        assert_eq!(AerCounts::parse("").unwrap(), AerCounts::default());
        let e = AerCounts::parse("RxErr lots\n").unwrap_err();
        assert_eq!(e, "\"RxErr lots\": the count is not a whole number");
        assert!(AerCounts::parse("RxErr 1 2").is_err());
        assert!(AerCounts::parse("RxErr -1").is_err());
        let huge = format!("A {}\nB {}\n", u64::MAX, u64::MAX);
        assert_eq!(AerCounts::parse(&huge).unwrap().total, u64::MAX);
    }
}
