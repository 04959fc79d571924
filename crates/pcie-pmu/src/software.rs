//! The kernel's `software` PMU (`PERF_TYPE_SOFTWARE`, type 1) has no `events/` or `format/`
//! directory: perf knows its events from a built-in table. The same table lets
//! `software/cpu-clock/` (and `software/config=1/`) resolve here.

use crate::pmu::{EventAlias, Pmu, TermValue};

/// `PERF_COUNT_SW_*` names as perf spells them, with their `config` value.
pub const SOFTWARE_EVENTS: [(&str, u64); 12] = [
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("context-switches", 3),
    ("cpu-migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
    ("dummy", 9),
    ("bpf-output", 10),
    ("cgroup-switches", 11),
];

/// Give the `software` PMU its built-in event aliases (`config=N`) unless sysfs lists some.
pub fn add_builtin_events(pmu: &mut Pmu) {
    if pmu.name != "software" || !pmu.events.is_empty() {
        return;
    }
    for (name, config) in SOFTWARE_EVENTS {
        pmu.events.push(EventAlias {
            name: name.to_string(),
            encoding: format!("config={config:#x}"),
            terms: vec![("config".to_string(), TermValue::Value(config))],
            scale: None,
            unit: None,
        });
    }
    pmu.events.sort_by(|a, b| a.name.cmp(&b.name));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_spec::resolve;

    #[test]
    fn software_events_resolve() {
        let mut p = Pmu {
            name: "software".into(),
            type_id: 1,
            cpumask: vec![],
            formats: vec![],
            events: vec![],
            attrs: Default::default(),
        };
        add_builtin_events(&mut p);
        let pmus = [p];
        let r = resolve("software/task-clock/", &pmus).unwrap();
        assert_eq!((r.type_id, r.config[0], r.event.as_deref()), (1, 1, Some("task-clock")));
        assert_eq!(resolve("software/config=3/", &pmus).unwrap().config[0], 3);
        assert!(resolve("software/no-such/", &pmus).is_err());
    }
}
