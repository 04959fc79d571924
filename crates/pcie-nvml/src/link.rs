//! The GPU's link for `run.json`. A GPU lowers its link speed when idle, so the link is read
//! while a kernel keeps it busy, when the backend opens and again when the run ends; from
//! sysfs, with NVML's figures beside them (and in their place where sysfs cannot say). MPS and
//! MRRS live past config-space byte 64, readable only with CAP_SYS_ADMIN: without them the
//! link uses Linux's usual values and says so. The record always says where the link came
//! from, or why there is none. Pure functions over what the readers returned, so every case
//! is tested without a GPU.

use pcie_model::{Generation, LinkConfig, LinkParams};
use pcie_sysfs::DeviceRecord;
use serde::Serialize;

/// Assumed when config space cannot be read: the MPS x86 servers set for GPUs and Linux's
/// default MRRS.
pub const ASSUMED_MPS: u32 = 256;
pub const ASSUMED_MRRS: u32 = 512;

/// NVML's figures: link generation (1-6) and width, current and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvmlLink {
    pub gen: u32,
    pub width: u32,
    pub max_gen: u32,
    pub max_width: u32,
}

/// One reading of the link: when ("open" or "end", both with the GPU busy), from where
/// ("sysfs" or "nvml"), speed as sysfs spells it and width, current and maximum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReading {
    pub when: String,
    pub source: String,
    pub speed: Option<String>,
    pub width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
}

impl LinkReading {
    fn sysfs(when: &str, d: &DeviceRecord) -> LinkReading {
        LinkReading {
            when: when.into(),
            source: "sysfs".into(),
            speed: d.current_link_speed.clone(),
            width: d.current_link_width,
            max_speed: d.max_link_speed.clone(),
            max_width: d.max_link_width,
        }
    }

    fn nvml(when: &str, n: NvmlLink) -> LinkReading {
        let speed = |g: u32| {
            (g as usize)
                .checked_sub(1)
                .and_then(|i| Generation::ALL.get(i))
                .map(|g| g.sysfs_speed().to_string())
        };
        LinkReading {
            when: when.into(),
            source: "nvml".into(),
            speed: speed(n.gen),
            width: Some(n.width).filter(|w| *w > 0),
            max_speed: speed(n.max_gen),
            max_width: Some(n.max_width).filter(|w| *w > 0),
        }
    }

    /// Generation and width, when both are known.
    fn link(&self) -> Option<(Generation, u32)> {
        Some((Generation::from_sysfs_speed(self.speed.as_deref()?)?, self.width?))
    }

    fn text(&self) -> String {
        match self.link() {
            Some((g, w)) => format!("Gen{g} x{w}"),
            None => "unknown".into(),
        }
    }
}

/// What `run.json` records about the link (in the GPU's description) beside the link itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkRecord {
    pub readings: Vec<LinkReading>,
    /// MPS and MRRS of the link in `run.json`, and whether config space gave them.
    pub mps: Option<u32>,
    pub mrrs: Option<u32>,
    pub mps_mrrs_read: bool,
    /// Where the link in `run.json` comes from, or why `run.json` has none.
    pub note: String,
}

/// The readings of one moment: sysfs's record of the GPU's PCI function and NVML's figures,
/// or why each could not be had.
pub struct Readers {
    pub sysfs: Result<DeviceRecord, String>,
    pub nvml: Result<NvmlLink, String>,
}

impl Readers {
    fn readings(&self, when: &str) -> Vec<LinkReading> {
        let sysfs = self
            .sysfs
            .as_ref()
            .ok()
            .map(|d| LinkReading::sysfs(when, d))
            .filter(|r| r.link().is_some());
        let nvml = self.nvml.as_ref().ok().map(|n| LinkReading::nvml(when, *n));
        sysfs.into_iter().chain(nvml).collect()
    }

    /// Why neither source gave a link.
    fn why_none(&self) -> String {
        let sysfs = match &self.sysfs {
            Ok(_) => "no current link speed and width".to_string(),
            Err(e) => e.clone(),
        };
        let nvml = match &self.nvml {
            Ok(_) => "no current link generation and width".to_string(),
            Err(e) => e.clone(),
        };
        format!("no link state: sysfs: {sysfs}; NVML: {nvml}")
    }
}

/// The link at open (`readers` read while the GPU was busy) and its record: sysfs's reading
/// first, NVML's where sysfs has none; MPS/MRRS from config space or assumed.
pub fn at_open(readers: &Readers) -> (LinkRecord, Option<LinkConfig>) {
    let readings = readers.readings("open");
    let (mps, mrrs, read, why) = match &readers.sysfs {
        Ok(DeviceRecord {
            mps: Some(mps),
            mrrs: Some(mrrs),
            ..
        }) => (*mps, *mrrs, true, None),
        Ok(d) => (ASSUMED_MPS, ASSUMED_MRRS, false, d.note.clone()),
        Err(e) => (ASSUMED_MPS, ASSUMED_MRRS, false, Some(e.clone())),
    };
    let chosen = readings.iter().find_map(|r| Some((r, r.link()?)));
    let Some((reading, (gen, lanes))) = chosen else {
        let note = readers.why_none();
        return (
            LinkRecord {
                readings,
                mps: None,
                mrrs: None,
                mps_mrrs_read: false,
                note,
            },
            None,
        );
    };
    let config = LinkConfig::new(&LinkParams {
        gen,
        lanes,
        mps,
        mrrs,
        ..LinkParams::default()
    });
    let mut note = format!(
        "Gen{gen} x{lanes} read from {} while the GPU was busy; MPS {mps} and MRRS {mrrs} {}",
        reading.source,
        match (read, why) {
            (true, _) => "from config space".to_string(),
            (false, why) => format!(
                "assumed (config space: {})",
                why.unwrap_or_else(|| "not readable".into())
            ),
        }
    );
    if let Some(other) = readings
        .iter()
        .find(|r| r.source != reading.source && r.link().is_some())
    {
        if other.link() != reading.link() {
            note.push_str(&format!("; {} says {}", other.source, other.text()));
        }
    }
    let max = (
        reading.max_speed.as_deref().and_then(Generation::from_sysfs_speed),
        reading.max_width,
    );
    if let (Some(max_gen), Some(max_width)) = max {
        if (max_gen, max_width) != (gen, lanes) {
            note.push_str(&format!("; below the link's maximum, Gen{max_gen} x{max_width}"));
        }
    }
    let config = match config {
        Ok(c) => Some(c),
        Err(e) => {
            note = format!("{note}; not a link the model takes: {e}");
            None
        }
    };
    (
        LinkRecord {
            readings,
            mps: Some(mps),
            mrrs: Some(mrrs),
            mps_mrrs_read: read,
            note,
        },
        config,
    )
}

impl LinkRecord {
    /// Adds the readings taken when the run ended (the GPU busy again), noting a change from
    /// the link `run.json` records.
    pub fn at_end(&mut self, readers: &Readers) {
        let before = self.readings.first().and_then(LinkReading::link);
        let after = readers.readings("end");
        match after.first() {
            None => {
                let why = readers.why_none();
                if self.note.contains(&why) {
                    self.note.push_str("; at the end: the same");
                } else {
                    self.note.push_str(&format!("; at the end: {why}"));
                }
            }
            Some(r) if r.link() != before => {
                self.note.push_str(&format!(
                    "; the link changed during the run: {} at the end ({})",
                    r.text(),
                    r.source
                ));
            }
            Some(_) => {}
        }
        self.readings.extend(after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysfs(speed: &str, width: u32, mps: Option<u32>) -> DeviceRecord {
        DeviceRecord {
            bdf: "0000:19:00.0".into(),
            current_link_speed: Some(speed.into()),
            current_link_width: Some(width),
            max_link_speed: Some("32.0 GT/s PCIe".into()),
            max_link_width: Some(16),
            mps,
            mrrs: mps.map(|_| 512),
            note: mps
                .is_none()
                .then(|| "config space past byte 64 needs CAP_SYS_ADMIN".into()),
            ..DeviceRecord::default()
        }
    }

    const H100: NvmlLink = NvmlLink {
        gen: 5,
        width: 16,
        max_gen: 5,
        max_width: 16,
    };

    #[test]
    fn sysfs_with_config_space_gives_the_whole_link() {
        let (rec, link) = at_open(&Readers {
            sysfs: Ok(sysfs("32.0 GT/s PCIe", 16, Some(256))),
            nvml: Ok(H100),
        });
        let link = link.expect("a link");
        assert_eq!(
            (link.gen, link.lanes, link.mps, link.mrrs),
            (Generation::Gen5, 16, 256, 512)
        );
        assert_eq!(
            rec.note,
            "Gen5 x16 read from sysfs while the GPU was busy; MPS 256 and MRRS 512 from config space"
        );
        assert!(rec.mps_mrrs_read);
        let sources: Vec<_> = rec
            .readings
            .iter()
            .map(|r| (r.when.as_str(), r.source.as_str()))
            .collect();
        assert_eq!(sources, [("open", "sysfs"), ("open", "nvml")]);
    }

    #[test]
    fn unreadable_config_space_assumes_mps_and_mrrs_and_says_why() {
        let (rec, link) = at_open(&Readers {
            sysfs: Ok(sysfs("32.0 GT/s PCIe", 16, None)),
            nvml: Err("libnvidia-ml.so.1: cannot open shared object file".into()),
        });
        let link = link.expect("a link");
        assert_eq!((link.mps, link.mrrs), (ASSUMED_MPS, ASSUMED_MRRS));
        assert!(!rec.mps_mrrs_read);
        assert!(
            rec.note.ends_with(
                "MPS 256 and MRRS 512 assumed (config space: config space past byte 64 needs CAP_SYS_ADMIN)"
            ),
            "{}",
            rec.note
        );
    }

    #[test]
    fn nvml_stands_in_where_sysfs_cannot_say() {
        let (rec, link) = at_open(&Readers {
            sysfs: Err("sys/bus/pci/devices/0000:19:00.0: no such device".into()),
            nvml: Ok(NvmlLink {
                gen: 4,
                width: 16,
                max_gen: 5,
                max_width: 16,
            }),
        });
        let link = link.expect("NVML's link");
        assert_eq!((link.gen, link.lanes), (Generation::Gen4, 16));
        assert!(
            rec.note
                .starts_with("Gen4 x16 read from nvml while the GPU was busy; MPS 256"),
            "{}",
            rec.note
        );
        assert!(
            rec.note.ends_with("; below the link's maximum, Gen5 x16"),
            "{}",
            rec.note
        );
        assert_eq!(rec.readings[0].speed.as_deref(), Some("16.0 GT/s PCIe"));
    }

    #[test]
    fn a_disagreement_between_the_sources_is_noted_and_sysfs_wins() {
        let (rec, link) = at_open(&Readers {
            sysfs: Ok(sysfs("16.0 GT/s PCIe", 16, Some(256))),
            nvml: Ok(H100),
        });
        assert_eq!(link.map(|l| l.gen), Some(Generation::Gen4));
        assert!(rec.note.contains("; nvml says Gen5 x16"), "{}", rec.note);
        assert!(
            rec.note.ends_with("; below the link's maximum, Gen5 x16"),
            "{}",
            rec.note
        );
    }

    #[test]
    fn without_either_source_the_link_is_null_with_the_reasons() {
        let readers = Readers {
            sysfs: Err("no sysfs entry".into()),
            nvml: Err("libnvidia-ml.so.1: not found".into()),
        };
        let (rec, link) = at_open(&readers);
        assert!(link.is_none());
        assert_eq!(
            rec.note,
            "no link state: sysfs: no sysfs entry; NVML: libnvidia-ml.so.1: not found"
        );
        // A sysfs entry without link attributes (a VM's passthrough) says so.
        let mut d = sysfs("x", 16, None);
        d.current_link_speed = None;
        let (rec, link) = at_open(&Readers {
            sysfs: Ok(d),
            nvml: Err("no NVML".into()),
        });
        assert!(link.is_none());
        assert!(
            rec.note.contains("sysfs: no current link speed and width"),
            "{}",
            rec.note
        );
        assert!(rec.readings.is_empty());
    }

    #[test]
    fn the_end_reading_is_kept_and_a_change_noted() {
        let open = Readers {
            sysfs: Ok(sysfs("32.0 GT/s PCIe", 16, Some(256))),
            nvml: Err("none".into()),
        };
        let (mut same, _) = at_open(&open);
        let note = same.note.clone();
        same.at_end(&open);
        assert_eq!(same.note, note, "no change, nothing to say");
        assert_eq!(same.readings.len(), 2);
        assert_eq!(same.readings[1].when, "end");
        let (mut changed, _) = at_open(&open);
        changed.at_end(&Readers {
            sysfs: Ok(sysfs("2.5 GT/s PCIe", 16, Some(256))),
            nvml: Err("none".into()),
        });
        assert!(
            changed
                .note
                .ends_with("; the link changed during the run: Gen1 x16 at the end (sysfs)"),
            "{}",
            changed.note
        );
        let (mut lost, _) = at_open(&open);
        lost.at_end(&Readers {
            sysfs: Err("gone".into()),
            nvml: Err("none".into()),
        });
        assert!(lost
            .note
            .ends_with("; at the end: no link state: sysfs: gone; NVML: none"));
        // No reading at open nor at the end, for the same reasons: said once.
        let none = Readers {
            sysfs: Err("no sysfs entry".into()),
            nvml: Err("no NVML".into()),
        };
        let (mut never, _) = at_open(&none);
        never.at_end(&none);
        assert_eq!(
            never.note,
            "no link state: sysfs: no sysfs entry; NVML: no NVML; at the end: the same"
        );
    }

    #[test]
    fn nvml_generations_map_to_sysfs_speeds() {
        let r = LinkReading::nvml(
            "open",
            NvmlLink {
                gen: 6,
                width: 8,
                max_gen: 0,
                max_width: 0,
            },
        );
        assert_eq!(r.speed.as_deref(), Some("64.0 GT/s PCIe"));
        assert_eq!(
            (r.max_speed.as_deref(), r.max_width),
            (None, None),
            "0 is NVML's unknown"
        );
        assert_eq!(r.link(), Some((Generation::Gen6, 8)));
    }
}
