//! A small fit on the E5-2637 v3's measurements: three host keys moved 30 % off the hand
//! calibration come back to it from two small groups, and the written profile loads.

use pcie_fit::{fit, keys, FitOptions};
use pcie_sim::{DeviceProfile, HostProfile};
use std::path::Path;

#[test]
fn three_keys_moved_30_percent_off_come_back_from_two_small_groups() {
    let hand = HostProfile::load("e5-2637v3").unwrap();
    // Moved by name, as the fit moves them (a spread moves whole).
    let mut v = serde_json::to_value(&hand).unwrap();
    for (name, factor) in [
        ("memory.llc_hit", 1.3),
        ("memory.dram", 0.7),
        ("root_complex.write_commit_ns", 1.3),
    ] {
        let x = keys::get(&v, name).unwrap();
        assert!(keys::set(&mut v, name, x * factor, keys::Scale::Linear));
    }
    let base = pcie_fit::profile_toml::checked(&v).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro");
    let opts = FitOptions {
        dirs: vec![dir],
        device: DeviceProfile::load("nfp6000").unwrap(),
        bases: vec![base],
        name: "refit".into(),
        only: vec!["lat_dma_sizes".into(), "lat_cmd_sizes".into()],
        holdout: vec![],
        seed: 1,
        threads: 2,
        search_count: 2_000,
        final_count: 10_000,
    };
    let mut calls = 0;
    let r = fit(&opts, &mut |p| {
        calls += 1;
        assert!(p.simulations <= p.planned, "{} of {}", p.simulations, p.planned);
    })
    .unwrap();
    assert!(calls > 10);
    let fitted = |name: &str| r.keys.iter().find(|k| k.name == name).unwrap().fitted.unwrap();
    // The hand calibration's values, within a third of a 13.3 ns counter tick.
    for (name, truth) in [
        ("memory.llc_hit", 161.0),
        ("memory.dram", 208.0),
        ("root_complex.write_commit_ns", 220.0),
    ] {
        let x = fitted(name);
        assert!((x - truth).abs() <= 5.0, "{name}: fitted {x}, hand {truth}");
    }
    // Nothing else was identified, so nothing else moved; the MPS was read from the lspci dump.
    assert_eq!(r.keys.iter().filter(|k| k.fitted.is_some() && !k.measured).count(), 3);
    let mps = r.keys.iter().find(|k| k.measured).unwrap();
    assert_eq!((mps.name.as_str(), mps.fitted), ("link.max_mps", Some(256.0)));
    let met = |v: &[pcie_fit::score::Verdict]| v.iter().filter(|v| v.met).count();
    assert!(met(&r.verdicts_after) > met(&r.verdicts_before));
    assert!(r.verdicts_after.iter().all(|v| v.met), "{:?}", r.unreached);
    let back = HostProfile::parse("refit.toml", &r.profile_toml).unwrap();
    assert_eq!(back.memory.llc_hit.mode_ns, fitted("memory.llc_hit"));
    assert_eq!(back.iommu, hand.iommu);
}
