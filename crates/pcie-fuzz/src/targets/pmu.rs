//! Targets for pcie-pmu's parsers: event strings (perf's `pmu/event,term=val/` and the kernel's
//! `events/` files), `format/` bit-field specs, `-e` lists with `{...}` groups, event catalogs.

use crate::{refused, text, FuzzTarget, Verdict};
use pcie_pmu::catalog::MAX_BYTES_PER_COUNT;
use pcie_pmu::fixture::{self, DwcVariant, Tree};
use pcie_pmu::{split_event_list, Catalog, ConfigField, EventAlias, EventSpec, FormatTerm, Pmu, ResolvedEvent, System};
use std::sync::OnceLock;

/// A host with a PMU of every PCIe family (and perf's common ones), discovered once per process
/// from a fixture tree (removed again once read).
fn system() -> &'static System {
    static SYSTEM: OnceLock<System> = OnceLock::new();
    SYSTEM.get_or_init(|| {
        let t = Tree::new("fuzz-event-string");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0");
        fixture::hisi_pmu(&t, "hisi_pcie0_core1", 30, "0x30", Some(("0x3000", "0x30ff")));
        fixture::intel_iio_pmus(&t, 0, 40, "3.0517578125e-5", &["0000:00"]);
        fixture::nvidia_grace_pmu(&t, 0, 60);
        fixture::marvell_pmu(&t, "mrvl_pcie_rc_pmu_8e0000000000", 70);
        System::discover(t.path()).expect("the fixture tree is a sysfs tree")
    })
}

/// Bits of `field` that some format term of `pmu` may set.
fn format_mask(pmu: &Pmu, field: ConfigField) -> u64 {
    pmu.formats
        .iter()
        .filter(|f| f.field == field)
        .map(|f| f.pack(0, f.max_value()).unwrap_or(0))
        .fold(0, |a, b| a | b)
}

/// What must hold for every resolved event: without a whole-word `config*` term, only bits of
/// the PMU's format terms are set; the user's last format term holds the value it has alone.
fn check_resolved(spec: &EventSpec, alias_terms: &[String], ev: &ResolvedEvent, pmus: &[Pmu]) -> Verdict {
    let Some(pmu) = pmus.iter().find(|p| p.name == ev.pmu) else {
        return Verdict::Wrong(format!("resolved to a PMU that does not exist: {}", ev.pmu));
    };
    let whole_word = spec
        .terms
        .iter()
        .map(|(k, _)| k)
        .chain(alias_terms)
        .any(|k| ConfigField::from_name(k).is_some());
    if !whole_word {
        for f in ConfigField::ALL {
            let stray = ev.config[f.index()] & !format_mask(pmu, f);
            if stray != 0 {
                return Verdict::Wrong(format!("{} bits {stray:#x} set outside every format term", f.name()));
            }
        }
    }
    if let Some((k, Some(v))) = spec.terms.last() {
        if let Some(term) = pmu.format(k) {
            let alone = EventSpec {
                pmu: ev.pmu.clone(),
                terms: vec![(k.clone(), Some(v.clone()))],
            };
            let Ok(alone) = alone.resolve(pmus) else {
                return Verdict::Wrong(format!("{k}={v} resolves with the event but not alone"));
            };
            let (got, want) = (
                term.unpack(ev.config[term.field.index()]),
                term.unpack(alone.config[term.field.index()]),
            );
            if got != want {
                return Verdict::Wrong(format!("{k}={v} is the last term but the event holds {got:#x}"));
            }
        }
    }
    Verdict::Accepted
}

/// `pmu/event,term=val/` against the fixture host (every instance of a base name); text without
/// a slash is an `events/` file's contents, resolved as an alias of `uncore_iio_0`.
fn event_string(input: &[u8]) -> Verdict {
    let s = text(input);
    let sys = system();
    if s.contains('/') {
        let spec = match EventSpec::parse(&s) {
            Ok(spec) => spec,
            Err(e) => return refused(e.to_string()),
        };
        if EventSpec::parse(&spec.to_string()).as_ref() != Ok(&spec) {
            return Verdict::Wrong(format!("does not parse back from its spelling {spec}"));
        }
        return match sys.resolve_all(&s) {
            Ok(all) => all
                .iter()
                .map(|ev| {
                    let alias: Vec<String> = ev
                        .event
                        .as_ref()
                        .and_then(|a| sys.pmus.iter().find(|p| p.name == ev.pmu)?.event(a))
                        .map(|a| a.terms.iter().map(|(k, _)| k.clone()).collect())
                        .unwrap_or_default();
                    check_resolved(&spec, &alias, ev, &sys.pmus)
                })
                .find(|v| *v != Verdict::Accepted)
                .unwrap_or(Verdict::Accepted),
            Err(e) => refused(e.to_string()),
        };
    }
    let alias = match EventAlias::parse("fuzzed", &s) {
        Ok(a) => a,
        Err(e) => return refused(e),
    };
    let Some(base) = sys.pmus.iter().find(|p| p.name == "uncore_iio_0") else {
        return Verdict::Wrong("the fixture host has no uncore_iio_0".into());
    };
    let pmu = Pmu {
        events: vec![alias.clone()],
        ..base.clone()
    };
    let params: String = alias.required_params().iter().map(|p| format!(",{p}=1")).collect();
    let spec = match EventSpec::parse(&format!("uncore_iio_0/fuzzed{params}/")) {
        Ok(spec) => spec,
        Err(e) => return Verdict::Wrong(format!("the alias's own spec does not parse: {e}")),
    };
    let pmus = [pmu];
    match spec.resolve(&pmus) {
        Ok(ev) => {
            let terms: Vec<String> = alias.terms.iter().map(|(k, _)| k.clone()).collect();
            check_resolved(&spec, &terms, &ev, &pmus)
        }
        Err(e) => refused(e.to_string()),
    }
}

/// A `format/` file: the term's bits are distinct, within 0 to 63, and pack and unpack agree.
fn format_spec(input: &[u8]) -> Verdict {
    let s = text(input);
    let t = match FormatTerm::parse("fuzzed", &s) {
        Ok(t) => t,
        Err(e) => return refused(e),
    };
    let width = t.width();
    if width == 0 || width > 64 || t.ranges.iter().any(|&(lo, hi)| lo > hi || hi > 63) {
        return Verdict::Wrong(format!("accepted ranges {:?} ({width} bits)", t.ranges));
    }
    let max = t.max_value();
    let Some(bits) = t.pack(0, max) else {
        return Verdict::Wrong(format!("its own maximum {max:#x} does not fit"));
    };
    if bits.count_ones() != width || t.unpack(bits) != max {
        return Verdict::Wrong(format!("{width} bits but the maximum packs to {bits:#x}"));
    }
    if t.pack(u64::MAX, 0) != Some(!bits) {
        return Verdict::Wrong("packing 0 clears bits that are not the term's".into());
    }
    if width < 64 && t.pack(0, max + 1).is_some() {
        return Verdict::Wrong(format!("{:#x} fits {width} bits", max + 1));
    }
    match FormatTerm::parse("fuzzed", &t.describe()) {
        Ok(again) if again == t => Verdict::Accepted,
        _ => Verdict::Wrong(format!("does not parse back from its spelling {}", t.describe())),
    }
}

/// An `-e` list: events are non-empty and trimmed, groups numbered from 1 in order, each group's
/// events side by side.
fn event_list(input: &[u8]) -> Verdict {
    let s = text(input);
    let items = match split_event_list(&s) {
        Ok(items) => items,
        Err(e) => return refused(e),
    };
    if items.len() > s.matches(',').count() + 1 {
        return Verdict::Wrong(format!("{} events from {} commas", items.len(), s.matches(',').count()));
    }
    let mut last = 0;
    let mut previous = None;
    for it in &items {
        if it.text.is_empty() || it.text.trim() != it.text {
            return Verdict::Wrong(format!("event {:?} is empty or untrimmed", it.text));
        }
        if let Some(g) = it.group {
            let continues = previous == Some(g);
            if !(continues || g == last + 1) {
                return Verdict::Wrong(format!("group {g} after group {last}"));
            }
            last = g;
        }
        previous = it.group;
    }
    Verdict::Accepted
}

/// A catalog file through the public loader; what it accepts is usable.
fn catalog(input: &[u8]) -> Verdict {
    let s = text(input);
    let c = match Catalog::parse("fuzzed.toml", &s) {
        Ok(c) => c,
        Err(e) => return refused(e.to_string()),
    };
    for e in &c.events {
        let mut scales = e
            .bytes_per_count
            .into_iter()
            .chain(e.variants.iter().map(|v| v.bytes_per_count));
        if let Some(b) = scales.find(|b| !(*b > 0.0 && *b <= MAX_BYTES_PER_COUNT)) {
            return Verdict::Wrong(format!("event {:?}: bytes_per_count {b} accepted", e.name));
        }
        let mut models = e.variants.iter().flat_map(|v| v.cpu_models.iter().flatten());
        if let Some(m) = models.find(|m| **m > 255) {
            return Verdict::Wrong(format!("event {:?}: cpu model {m} accepted", e.name));
        }
        if let Some(enc) = &e.encoding {
            if EventAlias::parse(&e.name, enc).is_err() {
                return Verdict::Wrong(format!("event {:?}: encoding {enc:?} accepted", e.name));
            }
        }
    }
    Verdict::Accepted
}

/// The built-in catalogs.
const CATALOGS: [&str; 6] = [
    include_str!("../../../../data/catalogs/dwc.toml"),
    include_str!("../../../../data/catalogs/hisi_pcie.toml"),
    include_str!("../../../../data/catalogs/intel_iio.toml"),
    include_str!("../../../../data/catalogs/intel_iio_free_running.toml"),
    include_str!("../../../../data/catalogs/nvidia_pcie.toml"),
    include_str!("../../../../data/catalogs/marvell_pem.toml"),
];

/// A catalog without its comments and `sources` list (optional), cut after its first `n`
/// events (whole files parse too slowly in a debug build for 100,000 inputs; every key and
/// table kind still appears in some seed).
fn first_events(catalog: &str, n: usize) -> String {
    let mut lines = Vec::new();
    let mut in_sources = false;
    for l in catalog.lines().filter(|l| !l.trim_start().starts_with('#')) {
        in_sources |= l.starts_with("sources");
        if !in_sources {
            lines.push(l);
        }
        in_sources &= !l.trim_end().ends_with(']');
    }
    let end = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[event]]")
        .nth(n)
        .map_or(lines.len(), |(i, _)| i);
    lines[..end].join("\n") + "\n"
}

pub fn targets() -> Vec<FuzzTarget> {
    vec![
        FuzzTarget::new(
            "event-string",
            &[
                "dwc_rootport_3018/rx_memory_read,lane=4/",
                "dwc_rootport/Rx_PCIe_TLP_Data_Payload/",
                "pcie_bdf_300300/Tx_PCIe_TLP_Data_Payload/",
                "hisi_pcie0_core1/rx_mwr_flux,port=0x1,bdf=0x3000/",
                "uncore_iio_0/event=0x83,umask=0x4,ch_mask=0x1,fc_mask=0x7/",
                "uncore_iio_free_running_0/bw_in_port0/",
                "nvidia_pcie_pmu_0/rd_bytes_loc,root_port=0x1/",
                "mrvl_pcie_rc_pmu_8e0000000000/ib_tlp_dwords_pr/",
                "software/config=0x0/",
                "event=0xff,umask=0x10",
                "event=0x83,umask=0x4,ch_mask=0x1,fc_mask=0x7,edge",
                "event=0x83, umask=0x1, thresh=?",
                "config=0x10010,config1=0x3",
            ],
            &[
                "/",
                ",",
                "=",
                "?",
                "0x",
                " ",
                "config",
                "config1",
                "config2",
                "config3",
                "lane",
                "eventid",
                "type",
                "event",
                "umask",
                "thresh",
                "ch_mask",
                "port",
                "bdf",
                "root_port",
                "edge",
                "dwc_rootport",
                "uncore_iio",
                "nvidia_pcie_pmu",
                "hisi_pcie0_core1",
            ],
            event_string,
        ),
        FuzzTarget::new(
            "format-spec",
            &[
                "config:0-7",
                "config1:63",
                "config2:0-63",
                "config:0-7,32-35",
                "config3:16-27\n",
                "config:20-27",
            ],
            &[
                "config", "config1", "config2", "config3", ":", "-", ",", "63", "64", "0",
            ],
            format_spec,
        ),
        FuzzTarget::new(
            "event-list",
            &[
                "dwc_rootport_3018/rx_memory_read,lane=4/,software/cpu-clock/",
                "{hisi_pcie0_core1/rx_mwr_flux/,hisi_pcie0_core1/rx_mwr_time/}",
                "x/y/, {a/b,c=1/, d/e/} ,{f/g/},h/i/",
                "a/{b}/",
                "msr/tsc/",
            ],
            &["{", "}", ",", "/", "=", " ", "a/b/", "{a/b/,c/d/}"],
            event_list,
        ),
        FuzzTarget {
            name: "catalog",
            seeds: CATALOGS.iter().map(|c| first_events(c, 2).into_bytes()).collect(),
            dictionary: vec![
                "[[event]]",
                "[[event.variant]]",
                "name = ",
                "metric = ",
                "unit = ",
                "bytes_per_count = ",
                "group = ",
                "encoding = ",
                "tag = ",
                "cpu_models = [",
                "also = [",
                "\"bytes\"",
                "\"rx_bytes\"",
                "\"",
                "=",
                "\n",
                "[",
                "]",
            ],
            run: catalog,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_is_accepted() {
        for t in targets() {
            for seed in &t.seeds {
                assert_eq!((t.run)(seed), Verdict::Accepted, "{}: {}", t.name, text(seed));
            }
        }
    }

    #[test]
    fn nonsense_the_parsers_once_took_is_refused() {
        for (target, input) in [
            (format_spec as fn(&[u8]) -> Verdict, "config:0-7,4-11"),
            (format_spec, "config:70-80"),
            (event_string, "event=1,event=2"),
            (event_string, "uncore_iio_0/event=1,event=2/"),
            (event_list, "{}"),
            (catalog, "family = \"dwc\"\ndescription = \"d\"\n[[event]]\nname = \"e\"\nmetric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = 1e300\n"),
        ] {
            assert!(matches!(target(input.as_bytes()), Verdict::Refused(_)), "{input}");
        }
    }
}
