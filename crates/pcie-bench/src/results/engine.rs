//! Who moved the data on a GPU (`--engine`, recorded in `run.json`) and the smallest window
//! its threads run bandwidth tests in: the vocabulary the results, charts and comparisons read
//! back from a GPU run, owned here so they need not know the GPU backend.

use crate::params::TestParams;

/// Who moves the data on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// The GPU's threads load and store host memory mapped into the GPU.
    Sm,
    /// The copy engines (`cuMemcpyHtoDAsync` / `cuMemcpyDtoHAsync`).
    Ce,
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "sm" => Ok(Engine::Sm),
            "ce" => Ok(Engine::Ce),
            _ => Err(format!(
                "engine {s}: must be sm (the GPU's threads) or ce (the copy engines)"
            )),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Engine::Sm => "sm",
            Engine::Ce => "ce",
        })
    }
}

/// Smallest window the GPU's threads run bandwidth tests in. The kernel keeps hundreds of
/// thousands of threads busy (270,336 on an H100), so in a small window many of them load or
/// store the same host cache lines at once. On an H100 (data/measured/h100-80gb-hbm3-vm, 2048 B
/// DMAs, model 446.9 Gb/s) an 8 KiB window gave BW_WR 593.5 Gb/s, above the link: writes to
/// one line merged before the link; and BW_RD 39.3 Gb/s: reads of the same lines were served
/// one after another (at its 1.2 us latency that is ~6 KB in flight by Little's law, where the
/// kernel issues thousands of reads). At 256 KiB and at 64 MiB both directions were within
/// 90-95 % of the model. A window must hold the reads the link keeps in flight (its
/// bandwidth-delay product: Gen5 x16 at 1.2 us is 67 KB, Gen6 134 KB) in distinct lines;
/// 256 KiB does so with room for both.
pub const SM_MIN_WINDOW: u64 = 256 << 10;

impl Engine {
    /// Why this engine does not run test `t`, or `None` when it does.
    pub fn leaves_out(self, t: &TestParams) -> Option<String> {
        match self {
            Engine::Ce if !t.kind.is_bandwidth() => {
                Some("the copy engines move bulk data: bandwidth tests only (--engine sm runs latency tests)".into())
            }
            Engine::Sm if t.kind.is_cmd() => Some("a GPU has no command path (pcie-bench's NFP-6000 had one)".into()),
            Engine::Sm if t.kind.is_bandwidth() && t.window < SM_MIN_WINDOW => Some(format!(
                "windows under {} KiB on the GPU's threads: thousands of threads would hit the same \
                 host cache lines at once, so writes merge before the link and reads of a line wait \
                 for each other (an H100 at 8 KiB, 2048 B: BW_WR 593.5 Gb/s above its link's 446.9, \
                 BW_RD 39.3); use --window 256K or more, the gpu suite, or --engine ce",
                SM_MIN_WINDOW >> 10
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{sample, Pattern, TestKind};

    #[test]
    fn what_each_engine_runs() {
        let test = |kind, window| TestParams {
            kind,
            size: 64,
            window,
            pattern: Pattern::Rand,
            ..sample(kind, 1000)
        };
        let runs = |e: Engine, kind, window| e.leaves_out(&test(kind, window)).is_none();
        assert!(runs(Engine::Ce, TestKind::BwWr, 8192) && !runs(Engine::Ce, TestKind::LatRd, 1 << 26));
        assert!(runs(Engine::Sm, TestKind::LatWrRd, 8192) && !runs(Engine::Sm, TestKind::LatCmdRd, 1 << 26));
        // The GPU's threads: bandwidth from 256 KiB windows on; latency (one DMA at a time) in any.
        for kind in [TestKind::BwRd, TestKind::BwWr, TestKind::BwRdWr] {
            assert!(!runs(Engine::Sm, kind, SM_MIN_WINDOW - 4096), "{kind}");
            assert!(runs(Engine::Sm, kind, SM_MIN_WINDOW), "{kind}");
        }
        assert!(runs(Engine::Sm, TestKind::LatRd, 4096));
        assert_eq!("ce".parse::<Engine>(), Ok(Engine::Ce));
        assert!("gpu".parse::<Engine>().unwrap_err().contains("must be sm"));
    }
}
