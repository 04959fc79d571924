//! The committed real GPU runs the bands come from, embedded at build time by `build.rs`
//! from `data/measured/` and read through the same reader as any run directory.

use crate::results::{ResultFile, RunData};
use std::path::PathBuf;

include!(concat!(env!("OUT_DIR"), "/measured_runs.rs"));

/// Every committed GPU run, named `<machine>/<run>` (its directory under `data/measured/`).
/// A file that no longer parses is left out, so one bad commit cannot stop `bench run`; the
/// test below keeps every committed run readable.
pub fn committed_runs() -> Vec<RunData> {
    MEASURED
        .iter()
        .filter_map(|(name, files)| load(name, files).ok())
        .collect()
}

fn load(name: &str, files: &[(&str, &str)]) -> Result<RunData, String> {
    let dir = PathBuf::from("data/measured").join(name);
    let mut run = RunData {
        dir: dir.clone(),
        info: None,
        files: Vec::new(),
        netfpga: false,
    };
    for (file, text) in files {
        if *file == "run.json" {
            run.info = Some(serde_json::from_str(text).map_err(|e| format!("{name}/run.json: {e}"))?);
        } else if let Some(f) = ResultFile::parse(&dir.join(file), text).map_err(|e| e.to_string())? {
            run.files.push(f);
        }
    }
    Ok(run)
}

/// The name a committed run goes by (`h100-80gb-hbm3-vm/quick-sm`).
pub(super) fn run_name(run: &RunData) -> String {
    let parts: Vec<_> = run
        .dir
        .iter()
        .rev()
        .take(2)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_gpu_run_loads() {
        assert_eq!(committed_runs().len(), MEASURED.len(), "a committed run failed to load");
        for (name, files) in MEASURED {
            load(name, files).unwrap();
        }
        let names: Vec<_> = committed_runs().iter().map(run_name).collect();
        assert!(names.contains(&"h100-80gb-hbm3-vm/quick-sm".to_string()), "{names:?}");
        assert!(names.contains(&"h100-80gb-hbm3-vm/quick-ce".to_string()), "{names:?}");
    }
}
