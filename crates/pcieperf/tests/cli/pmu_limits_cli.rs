//! Hostile numbers and lists on the `pmu` commands: each exits 2 with a message naming the
//! value and what is allowed, before anything is written; hostile sysfs files are skipped with a
//! warning naming the file.

use crate::common;
use common::{pcieperf, refused, stderr};
use pcie_pmu::fixture::{self, DwcVariant, Tree};

/// `pmu record --source sim --fast -o FILE` with `args`: refused, and FILE never appears.
fn record_refused(tag: &str, args: &[&str]) -> String {
    let d = common::scratch_dir(&format!("limits-{tag}"));
    let out = d.join("r.csv");
    let mut all = vec![
        "pmu",
        "record",
        "--source",
        "sim",
        "--fast",
        "-o",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let e = refused(&all);
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "{args:?} wrote a file");
    std::fs::remove_dir_all(&d).unwrap();
    e
}

#[test]
fn intervals_and_durations_out_of_range_exit_2() {
    for (i, (args, says)) in [
        (&["-I", "0"][..], "-I 0: the interval must be at least 1 ms"),
        (
            &["-I", "86400001"],
            "-I 86400001: the interval must be at most 86400000 ms (a day)",
        ),
        (
            &["-I", "18446744073709551615"],
            "-I 18446744073709551615: the interval must be at most 86400000 ms",
        ),
        (&["-I", "18446744073709551616"], "18446744073709551616"),
        (&["-I", "-1"], "-1"),
        (&["-I", "nan"], "nan"),
        (&["-I", "1e300"], "1e300"),
        (
            &["--duration", "0"],
            "--duration 0: must be a positive number of seconds",
        ),
        (
            &["--duration", "-1"],
            "--duration -1: must be a positive number of seconds",
        ),
        (
            &["--duration", "nan"],
            "--duration NaN: must be a positive number of seconds",
        ),
        (
            &["--duration", "inf"],
            "--duration inf: must be a positive number of seconds",
        ),
        (
            &["--duration", "1e300"],
            "--duration 1e300: must be from 0.001 to 1e9 seconds",
        ),
        (
            &["--duration", "1e-300"],
            "--duration 1e-300: must be from 0.001 to 1e9 seconds",
        ),
        (
            &["--duration", "0.0009"],
            "--duration 9e-4: must be from 0.001 to 1e9 seconds",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let e = record_refused(&format!("range-{i}"), args);
        assert!(e.contains(says), "{args:?}: {e}");
    }
    for (cmd, extra) in [
        ("stat", "--format=table"),
        ("top", "--format=csv"),
        ("serve", "--listen=127.0.0.1:0"),
    ] {
        let run = |args: &[&str]| {
            let mut all = vec!["pmu", cmd, extra, "--source", "sim", "-e", "dwc_rootport_8/l0/"];
            all.extend_from_slice(args);
            refused(&all)
        };
        let e = run(&["-I", "86400001"]);
        assert!(e.contains("-I 86400001: the interval must be at most"), "{cmd}: {e}");
        let e = run(&["--duration", "1e10"]);
        assert!(
            e.contains("--duration 1e10: must be from 0.001 to 1e9 seconds"),
            "{cmd}: {e}"
        );
    }
}

#[test]
fn hostile_event_lists_exit_2_naming_the_list() {
    for (i, (list, says)) in [
        ("{}", "empty group {}"),
        ("{dwc_rootport_8/l0/,{dwc_rootport_8/l1/}}", "groups do not nest"),
        ("{dwc_rootport_8/l0/", "a group is not closed with '}'"),
        ("dwc_rootport_8/l0/}", "'}' closes no group"),
        ("dwc_rootport_8/l0/,,dwc_rootport_8/l1/", "empty event between commas"),
        ("dwc_rootport_8/l0,l1/", "two events in one PMU block"),
        ("dwc_rootport_8/rx_memory_read,lane=1,lane=2/", "lane: given twice"),
        (
            "dwc_rootport_8/rx_memory_read,lane=0x10000000000000000/",
            "not a number",
        ),
        (
            "dwc_rootport_8/rx_memory_read,lane=0x100/",
            "lane=0x100 does not fit config:",
        ),
        ("dwc_rootport_8/config=18446744073709551616/", "not a number"),
    ]
    .into_iter()
    .enumerate()
    {
        let e = record_refused(&format!("list-{i}"), &["-e", list]);
        assert!(e.contains(&format!("{list:?}")) && e.contains(says), "{list}: {e}");
    }
    // A base name opens every instance (18 on the simulated host): 300 of them is 5400 events.
    let many = vec!["dwc_rootport/rx_pcie_tlp_data_payload/"; 300].join(",");
    let e = record_refused("many", &["-e", &many]);
    assert!(e.contains("-e: more than 4096 events"), "{e}");
}

#[test]
fn validate_numbers_out_of_range_exit_2() {
    for (args, says) in [
        (&["--bs", "0"][..], "--bs 0: must be a multiple of 512 bytes"),
        (&["--bs", "18446744073709551615"], "--bs 18446744073709551615: must be"),
        (&["--bs", "zz"], "--bs zz: must be"),
        (
            &["--iodepth", "0"],
            "--iodepth 0: must be a whole number from 1 to 4096",
        ),
        (
            &["--iodepth", "4097"],
            "--iodepth 4097: must be a whole number from 1 to 4096",
        ),
        (
            &["--numjobs", "18446744073709551616"],
            "--numjobs 18446744073709551616: must be",
        ),
        (
            &["--runtime", "1e300"],
            "--runtime 1e300: must be a duration from 1us to 24h",
        ),
        (&["--runtime", "nan"], "--runtime nan: must be"),
        (&["--size", "0"], "--size 0: must be a size from 512 bytes to 1T"),
        (
            &["--size", "18446744073709551615"],
            "--size 18446744073709551615: must be a size from 512 bytes to 1T",
        ),
        (&["--size", "65G"], "--size 65G: at most 64G per job"),
        (&["-I", "0"], "-I 0: the interval must be at least 1 ms"),
        (&["-I", "86400001"], "-I 86400001: the interval must be at most"),
        (&["--seed", "18446744073709551616"], "18446744073709551616"),
        (&["--seed", "-1"], "-1"),
    ] {
        let mut all = vec!["pmu", "validate", "--source", "sim", "--port", "00:01.0"];
        all.extend_from_slice(args);
        let e = refused(&all);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

#[test]
fn listen_addresses_that_are_not_addresses_exit_2() {
    for bad in [
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "127.0.0.1",
        "localhost:9464",
        "",
        ":9464",
    ] {
        let e = refused(&["pmu", "serve", "--source", "sim", "--listen", bad]);
        assert!(
            e.contains(&format!("--listen {bad}: expected ADDRESS:PORT")),
            "{bad}: {e}"
        );
    }
}

#[test]
fn hostile_sysfs_numbers_skip_the_pmu_naming_the_file() {
    let t = Tree::new("limits-sysfs");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    let pmu = "sys/bus/event_source/devices/dwc_rootport_3018";
    for (file, content, says) in [
        ("format/lane", "config:70-80", "bit 70 is beyond 63 (bits are 0 to 63)"),
        ("format/lane", "config:9-3", "range 9-3 must be written low bit first"),
        ("format/lane", "config:0-7,4-11", "bits 4-11 overlap 0-7"),
        ("format/lane", "", "expected configN"),
        ("format/lane", "config5:1", "expected configN"),
        ("events/l0", "eventid=0x10000000000000000", "is not a number"),
        ("events/l0", "eventid=0x1,eventid=0x2", "term eventid appears twice"),
        ("type", "4294967296", "is not a PMU type number"),
        ("cpumask", "0-4294967295", "is not a CPU list"),
    ] {
        let path = format!("{pmu}/{file}");
        let before = std::fs::read_to_string(t.path().join(&path)).unwrap_or_default();
        t.raw(&path, content);
        let o = pcieperf(&["pmu", "list", "--sysfs", t.path().to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{file} {content}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("dwc_rootport_3018/{file}: ")) && err.contains(says),
            "{file} = {content:?}: {err}"
        );
        t.raw(&path, &before);
    }
    // A value wider than its format field is refused when the event is used, naming the file.
    t.raw(&format!("{pmu}/events/l0"), "eventid=0x10000,type=0x1");
    let e = refused(&[
        "pmu",
        "stat",
        "--sysfs",
        t.path().to_str().unwrap(),
        "-e",
        "dwc_rootport_3018/l0/",
        "--duration",
        "0.01",
    ]);
    assert!(
        e.contains("events/l0 sets eventid=0x10000 does not fit config:0-15"),
        "{e}"
    );
}
