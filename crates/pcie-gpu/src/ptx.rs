//! The kernels as PTX text (kernels.ptx), loaded with `cuModuleLoadData`: the driver compiles
//! them for the GPU at hand, so no CUDA compiler is needed to build pcieperf. The parameter
//! lists below are the contract between the text and the launches in `mod.rs`; the tests hold
//! the two together.

/// The PTX module.
pub const PTX: &str = include_str!("kernels.ptx");

/// Entry points and their parameters, in declaration order.
pub const TIMER_PROBE: (&str, &[&str]) = ("timer_probe", &["out"]);
pub const GATE: (&str, &[&str]) = ("gate", &["flag", "timeout"]);
pub const LATENCY: (&str, &[&str]) = (
    "latency",
    &[
        "buf", "offs", "table", "n", "size", "head", "body", "kind", "clock", "zero", "dry", "lat", "totals",
    ],
);
pub const BANDWIDTH: (&str, &[&str]) = (
    "bandwidth",
    &[
        "buf", "offs", "table", "n", "size", "head", "body", "lanes", "mode", "sink",
    ],
);
pub const DEVICE_WARM: (&str, &[&str]) = ("device_warm", &["buf", "bytes"]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{bandwidth_args, latency_args, Buffers};

    /// The parameters of `entry` as the PTX text declares them: (name, PTX type).
    fn parameters(entry: &str) -> Option<Vec<(String, String)>> {
        let head = format!(".visible .entry {entry}(");
        let start = PTX.find(&head)? + head.len();
        let end = start + PTX[start..].find(')')?;
        Some(
            PTX[start..end]
                .split(',')
                .map(|p| {
                    let words: Vec<&str> = p.split_whitespace().collect();
                    (words[2].to_string(), words[1].trim_start_matches('.').to_string())
                })
                .collect(),
        )
    }

    #[test]
    fn the_text_is_what_the_driver_accepts() {
        assert!(PTX.is_ascii(), "ptxas refuses non-ASCII characters, even in comments");
        assert!(!PTX.contains('\0'), "cuModuleLoadData reads up to the first NUL");
        assert!(PTX.contains(".version 7.0\n.target sm_70\n.address_size 64"));
        assert_eq!(PTX.matches('{').count(), PTX.matches('}').count());
    }

    #[test]
    fn every_launch_matches_its_entry_point() {
        for (entry, names) in [TIMER_PROBE, GATE, LATENCY, BANDWIDTH, DEVICE_WARM] {
            let declared = parameters(entry).unwrap_or_else(|| panic!("{entry} is not in the PTX"));
            let declared_names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(declared_names, names, "{entry}");
            for (name, ty) in &declared {
                assert!(ty == "u32" || ty == "u64", "{entry}.{name}: {ty}");
            }
        }
        assert_eq!(
            PTX.matches(".visible .entry").count(),
            5,
            "no entry point without a launch"
        );
    }

    #[test]
    fn launches_pass_the_parameters_in_the_declared_order() {
        let t = crate::plan::test(
            pcie_bench::params::TestKind::LatRd,
            64,
            0,
            8192,
            pcie_bench::params::Pattern::Rand,
        );
        let b = Buffers {
            host: 1,
            table: 2,
            entries: 3,
            out: 4,
            totals: 5,
        };
        let names = |a: &[(&'static str, crate::plan::Arg)]| a.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(names(&latency_args(&t, b, 0, true, false)), LATENCY.1);
        assert_eq!(names(&bandwidth_args(&t, b, 0)), BANDWIDTH.1);
        // Widths as declared: u64 for addresses, u32 for the rest.
        for (entry, args) in [
            (LATENCY.0, latency_args(&t, b, 0, true, false).to_vec()),
            (BANDWIDTH.0, bandwidth_args(&t, b, 0).to_vec()),
        ] {
            for ((name, arg), (_, ty)) in args.iter().zip(parameters(entry).unwrap()) {
                let expected = match arg {
                    crate::plan::Arg::U32(_) => "u32",
                    crate::plan::Arg::U64(_) => "u64",
                };
                assert_eq!(ty, expected, "{entry}.{name}");
            }
        }
    }

    /// The instructions of `entry`'s body, comments and blank lines left out.
    fn body(entry: &str) -> Vec<&'static str> {
        let start = PTX.find(&format!(".visible .entry {entry}(")).expect("the entry");
        let end = start + PTX[start..].find("\n}").expect("its end");
        PTX[start..end]
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .collect()
    }

    #[test]
    fn stores_to_host_memory_write_through_to_the_system() {
        // Host memory is reached through `ptr` in the DMA kernels (device_warm: also `ptr`);
        // device memory (samples, totals, sink) through other registers.
        let mut host_stores = 0;
        for entry in [LATENCY.0, BANDWIDTH.0, DEVICE_WARM.0] {
            for line in body(entry).into_iter().filter(|l| l.contains("st.global")) {
                let to_host = line.contains("[ptr]") && !line.contains("[ptr], tick32") && !line.contains("[ptr], acc");
                assert_eq!(line.contains("st.global.wt."), to_host, "{entry}: {line}");
                host_stores += to_host as usize;
            }
        }
        // latency: head, body, tail; bandwidth: the same; device_warm: one.
        assert_eq!(host_stores, 7);
    }

    #[test]
    fn lat_wrrd_fences_at_system_scope_between_the_writes_and_the_read_back() {
        let l = body(LATENCY.0);
        let at = |pred: &dyn Fn(&str) -> bool| l.iter().position(|x| pred(x)).expect("present");
        let last_store = l.iter().rposition(|x| x.starts_with("st.global.wt.")).unwrap();
        let fence = at(&|x| x == "fence.sc.sys;");
        let read_back = at(&|x| x.contains("ld.global.cv.u32 other"));
        assert!(
            last_store < fence && fence < read_back,
            "{last_store} {fence} {read_back}"
        );
        assert_eq!(l.iter().filter(|x| x.starts_with("fence")).count(), 1);
    }

    #[test]
    fn a_dry_latency_loop_touches_no_host_memory() {
        // Loads are predicated off (span 0, @live), the stores jumped over.
        let l = body(LATENCY.0);
        assert!(l.contains(&"@!live mov.u32 span, 0;"));
        assert!(l.contains(&"@!live bra WREAD;"));
        assert!(l.contains(&"@live ld.global.cv.u32 other, [ptr];"));
        for line in l.iter().filter(|x| x.contains("ld.global.cv.v4")) {
            assert!(line.starts_with("@p "), "{line}: bounded by span");
        }
    }

    #[test]
    fn the_gate_polls_host_memory_at_system_scope_and_says_who_opened_it() {
        let g = body(GATE.0);
        assert!(g.contains(&"ld.volatile.global.u32 v, [f];"));
        assert!(g.contains(&"st.volatile.global.u32 [f+4], v;"));
        assert!(
            g.iter().any(|x| x.contains("%globaltimer")),
            "a timeout bounds the wait"
        );
    }

    #[test]
    fn host_accesses_refetch_and_device_data_is_cached() {
        // Host-memory loads must cross the link every time (.cv); the address table in device
        // memory may be cached.
        for line in PTX
            .lines()
            .map(str::trim)
            .filter(|l| l.contains("ld.global") && !l.starts_with("//"))
        {
            let host = line.contains("[ptr]") && !line.contains(".u64 ");
            assert_eq!(line.contains(".cv"), host, "{line}");
        }
    }
}
