//! Embeds the committed real GPU runs (`data/measured/<machine>/<run>/` whose `run.json` names
//! the cuda backend) so the verdict's bands come from the files themselves: a run committed
//! there widens the band at the next build, with no number copied into code.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let measured = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measured");
    println!("cargo:rerun-if-changed={}", measured.display());
    let mut code = String::from("/// Committed real GPU runs: (name, [(file, text)]).\n");
    code.push_str("pub(super) const MEASURED: &[(&str, &[(&str, &str)])] = &[\n");
    let mut machines: Vec<_> = std::fs::read_dir(&measured)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    machines.sort();
    for machine in machines {
        println!("cargo:rerun-if-changed={}", machine.display());
        let mut runs: Vec<_> = std::fs::read_dir(&machine)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        runs.sort();
        for run in runs {
            let info = run.join("run.json");
            let Ok(text) = std::fs::read_to_string(&info) else {
                continue;
            };
            if !text.contains("\"name\": \"cuda\"") {
                continue;
            }
            println!("cargo:rerun-if-changed={}", run.display());
            let name = format!("{}/{}", file_name(&machine), file_name(&run));
            writeln!(code, "    ({name:?}, &[").unwrap();
            let mut files: Vec<_> = std::fs::read_dir(&run)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            files.sort();
            for f in files {
                let n = file_name(&f);
                // The summaries the verdict reads: run.json and the result CSVs, not raw samples or CDFs.
                if n == "run.json" || (n.ends_with(".csv") && !n.ends_with("_raw.csv") && !n.ends_with("_cdf.csv")) {
                    writeln!(
                        code,
                        "        ({n:?}, include_str!({:?})),",
                        f.canonicalize().unwrap().display().to_string()
                    )
                    .unwrap();
                }
            }
            code.push_str("    ]),\n");
        }
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("measured_runs.rs");
    std::fs::write(out, code).unwrap();
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}
