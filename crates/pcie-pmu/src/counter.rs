//! Counting: open resolved events and read `value`, `time_enabled` and `time_running`.
//!
//! [`CounterSource`] is what a monitor needs from a counter backend; [`PerfEvents`] implements it
//! with Linux `perf_event_open` following the uncore rules: `pid = -1`, the CPU is the first one
//! in the PMU's `cpumask` (CPU 0 when the PMU has none), no `exclude_*` bits, no sampling, and
//! `read_format = TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` so multiplexing can be scaled out.
//! A simulated source can implement the same trait.
//!
//! Why our own perf_event_open binding (issue 14): perf-event2 0.7.4 covers a dynamic `type` with
//! config..config3 (through an `Event` of ours; its `Dynamic` stops at config2), `pid = -1` on one
//! CPU, groups led by one of our events, per-counter value/enabled/running reads and CLOEXEC, but
//! does not keep the OS error everywhere: E2BIG comes back as its own `UnsupportedOptionsError` and
//! a 0-byte read as `UnexpectedEof`, both without errno, so our error classes and messages would
//! change. It also adds 7 crates (sampling, mmap ring buffers, record parsing we never use): about
//! 4.7 s of CPU in a release build, 2.3 s or more of wall time on 2 cores, of a 7 s margin.

use crate::event_spec::ResolvedEvent;
use std::fmt;
use std::time::Duration;

/// One read of a counter: the count and how long (ns) it was enabled and actually counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reading {
    pub value: u64,
    pub enabled: u64,
    pub running: u64,
}

/// Handle of a counter opened by a [`CounterSource`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CounterId(pub usize);

/// What was wrong when a counter could not be opened or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterError {
    /// EACCES / EPERM: not allowed to open the event (`perf_event_paranoid`, capabilities).
    Permission {
        event: String,
        pmu: String,
        errno: i32,
        /// `/proc/sys/kernel/perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
    },
    /// ENOENT / EINVAL / EOPNOTSUPP / ENODEV: the PMU or driver does not accept this event.
    Rejected {
        event: String,
        pmu: String,
        cpu: i32,
        errno: i32,
    },
    /// Any other failure of perf_event_open or read (EMFILE, EBUSY, a short read, ...).
    Os { what: String, errno: i32 },
    /// Counting is not available on this platform.
    Unsupported(String),
}

impl CounterError {
    /// True when the event the user asked for is what the kernel refused, or the user may not
    /// open it (exit 2 in the CLI).
    pub fn is_input(&self) -> bool {
        // A PMU the user may not open is an input problem too (exit 2): the message says how
        // to get permission.
        matches!(self, CounterError::Rejected { .. } | CounterError::Permission { .. })
    }

    /// True for EACCES / EPERM (tests skip on it).
    pub fn is_permission(&self) -> bool {
        matches!(self, CounterError::Permission { .. })
    }
}

fn strerror(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

impl fmt::Display for CounterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterError::Permission {
                event,
                pmu,
                errno,
                paranoid,
            } => {
                let level = match paranoid {
                    Some(p) => format!("kernel.perf_event_paranoid is {p}"),
                    None => "kernel.perf_event_paranoid could not be read".to_string(),
                };
                write!(
                    f,
                    "not permitted to open {event} on PMU {pmu} ({}): system-wide (CPU-bound) counting needs \
                     CAP_PERFMON (or CAP_SYS_ADMIN) or perf_event_paranoid <= 0, and {level}; \
                     run as root, grant the capability (setcap cap_perfmon+ep), or \
                     `sysctl kernel.perf_event_paranoid=0`",
                    strerror(*errno)
                )
            }
            CounterError::Rejected { event, pmu, cpu, errno } => write!(
                f,
                "PMU {pmu} refused event {event} on CPU {cpu} ({}): the driver does not support this event, \
                 configuration or group, or the PMU is gone",
                strerror(*errno)
            ),
            CounterError::Os { what, errno } => write!(f, "{what}: {}", strerror(*errno)),
            CounterError::Unsupported(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CounterError {}

/// A backend that opens counters and reads them, and keeps the clock they count against.
///
/// Monitors wait and timestamp through the source, not the wall clock, so a simulated host can
/// run its simulation while the monitor "sleeps" (paced to wall-clock time, or as fast as it can).
pub trait CounterSource {
    /// Open one counter for a resolved event; counting starts now.
    fn open(&mut self, event: &ResolvedEvent) -> Result<CounterId, CounterError>;
    /// Open events that must count over the same intervals (a perf event group: the first is
    /// the leader, and the kernel schedules them all or none, as HiSilicon's flux/time pairs
    /// need). A source without groups opens them one by one.
    fn open_group(&mut self, events: &[&ResolvedEvent]) -> Result<Vec<CounterId>, CounterError> {
        events.iter().map(|e| self.open(e)).collect()
    }
    /// The counter's current cumulative value and times.
    fn read(&mut self, id: CounterId) -> Result<Reading, CounterError>;
    /// Time on the source's clock since the source was created.
    fn elapsed(&self) -> Duration;
    /// Let `d` pass on the source's clock.
    fn sleep(&mut self, d: Duration) -> Result<(), CounterError> {
        std::thread::sleep(d);
        Ok(())
    }
}

/// How an event is named in messages: `pmu/event/` or `pmu/config=0x..,config1=0x../`.
pub fn event_name(e: &ResolvedEvent) -> String {
    match &e.event {
        Some(n) => format!("{}/{n}/", e.pmu),
        None => {
            let mut t = vec![format!("config={:#x}", e.config[0])];
            for (i, c) in e.config.iter().enumerate().skip(1) {
                if *c != 0 {
                    t.push(format!("config{i}={c:#x}"));
                }
            }
            format!("{}/{}/", e.pmu, t.join(","))
        }
    }
}

/// The CPU an uncore/system event is opened on: the first in the PMU's cpumask, else CPU 0.
pub fn target_cpu(e: &ResolvedEvent) -> i32 {
    e.cpumask.first().map_or(0, |&c| c as i32)
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    let path = std::path::Path::new("/proc/sys/kernel/perf_event_paranoid");
    pcie_output::read::read_text(path, pcie_output::read::Limit::ATTRIBUTE)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

pub use linux::PerfEvents;

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Instant;

    const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
    const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 2;
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    /// `_IO('$', 0)`: start counting (a whole group when called on its leader).
    const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
    /// `PERF_ATTR_SIZE_VER8` (with `config3`); older kernels accept it while the tail is zero.
    const ATTR_SIZE: u32 = 136;

    /// `struct perf_event_attr` as of Linux 6.3 (`PERF_ATTR_SIZE_VER8`).
    #[repr(C)]
    #[derive(Default)]
    struct PerfEventAttr {
        type_: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        /// disabled (bit 0), inherit, pinned, exclusive, exclude_*, ...: zero for uncore
        /// events except `disabled` on a group leader until its members are in.
        flags: u64,
        wakeup_events: u32,
        bp_type: u32,
        config1: u64,
        config2: u64,
        branch_sample_type: u64,
        sample_regs_user: u64,
        sample_stack_user: u32,
        clockid: i32,
        sample_regs_intr: u64,
        aux_watermark: u32,
        sample_max_stack: u16,
        reserved_2: u16,
        aux_sample_size: u32,
        reserved_3: u32,
        sig_data: u64,
        config3: u64,
    }

    const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == ATTR_SIZE as usize);

    /// Counters opened with `perf_event_open`; closed on drop.
    #[derive(Debug)]
    pub struct PerfEvents {
        fds: Vec<(OwnedFd, String)>,
        start: Instant,
    }

    impl PerfEvents {
        pub fn new() -> PerfEvents {
            PerfEvents {
                fds: Vec::new(),
                start: Instant::now(),
            }
        }
    }

    impl Default for PerfEvents {
        fn default() -> Self {
            PerfEvents::new()
        }
    }

    impl CounterSource for PerfEvents {
        fn open(&mut self, e: &ResolvedEvent) -> Result<CounterId, CounterError> {
            self.open_in(e, None, false)
        }

        /// As perf does: the leader opens disabled and is enabled once its members are in, so
        /// the group is scheduled as a whole (a member added to a running leader waits for a
        /// reschedule that a context which never multiplexes, like the software one, never does).
        fn open_group(&mut self, events: &[&ResolvedEvent]) -> Result<Vec<CounterId>, CounterError> {
            let Some((leader, rest)) = events.split_first() else {
                return Ok(Vec::new());
            };
            let first = self.open_in(leader, None, !rest.is_empty())?;
            let mut ids = vec![first];
            for e in rest {
                ids.push(self.open_in(e, Some(first), false)?);
            }
            if !rest.is_empty() {
                let (fd, name) = &self.fds[first.0];
                // SAFETY: an ioctl without argument on a perf event fd we own.
                if unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) } < 0 {
                    return Err(CounterError::Os {
                        what: format!("enable the group led by {name}"),
                        errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                    });
                }
            }
            Ok(ids)
        }

        fn read(&mut self, id: CounterId) -> Result<Reading, CounterError> {
            self.read_fd(id)
        }

        fn elapsed(&self) -> Duration {
            self.start.elapsed()
        }
    }

    impl PerfEvents {
        /// perf_event_open `e`, alone or as a member of `leader`'s group; `disabled` until an
        /// explicit enable.
        fn open_in(
            &mut self,
            e: &ResolvedEvent,
            leader: Option<CounterId>,
            disabled: bool,
        ) -> Result<CounterId, CounterError> {
            let group_fd = match leader {
                Some(id) => self.fds[id.0].0.as_raw_fd(),
                None => -1,
            };
            let attr = PerfEventAttr {
                type_: e.type_id,
                size: ATTR_SIZE,
                config: e.config[0],
                config1: e.config[1],
                config2: e.config[2],
                config3: e.config[3],
                read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                flags: disabled as u64,
                ..PerfEventAttr::default()
            };
            let cpu = target_cpu(e);
            // SAFETY: `attr` is a valid, fully initialised perf_event_attr of the size it states;
            // the other arguments are plain integers.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    &attr as *const PerfEventAttr,
                    -1 as libc::pid_t,
                    cpu as libc::c_int,
                    group_fd as libc::c_int,
                    PERF_FLAG_FD_CLOEXEC,
                )
            };
            let name = event_name(e);
            if fd < 0 {
                let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                return Err(match errno {
                    libc::EACCES | libc::EPERM => CounterError::Permission {
                        event: name,
                        pmu: e.pmu.clone(),
                        errno,
                        paranoid: perf_event_paranoid(),
                    },
                    libc::ENOENT | libc::EINVAL | libc::EOPNOTSUPP | libc::ENODEV | libc::ENXIO => {
                        CounterError::Rejected {
                            event: name,
                            pmu: e.pmu.clone(),
                            cpu,
                            errno,
                        }
                    }
                    _ => CounterError::Os {
                        what: format!("perf_event_open {name} on CPU {cpu}"),
                        errno,
                    },
                });
            }
            // SAFETY: the syscall returned a new file descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
            self.fds.push((fd, name));
            Ok(CounterId(self.fds.len() - 1))
        }

        fn read_fd(&mut self, id: CounterId) -> Result<Reading, CounterError> {
            let (fd, name) = self.fds.get(id.0).ok_or_else(|| CounterError::Os {
                what: format!("read counter {}: no such counter", id.0),
                errno: libc::EBADF,
            })?;
            let mut buf = [0u64; 3];
            // SAFETY: reading at most size_of_val(&buf) bytes into a buffer we own.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    std::mem::size_of_val(&buf),
                )
            };
            if n < 0 {
                let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                return Err(CounterError::Os {
                    what: format!("read {name}"),
                    errno,
                });
            }
            if n as usize != std::mem::size_of_val(&buf) {
                return Err(CounterError::Os {
                    what: format!("read {name}: {n} bytes instead of 24"),
                    errno: libc::EIO,
                });
            }
            Ok(Reading {
                value: buf[0],
                enabled: buf[1],
                running: buf[2],
            })
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod linux {
    use super::*;

    /// perf_event_open exists only on Linux.
    #[derive(Debug)]
    pub struct PerfEvents {
        start: std::time::Instant,
    }

    impl PerfEvents {
        pub fn new() -> PerfEvents {
            PerfEvents {
                start: std::time::Instant::now(),
            }
        }
    }

    impl Default for PerfEvents {
        fn default() -> Self {
            PerfEvents::new()
        }
    }

    impl CounterSource for PerfEvents {
        fn open(&mut self, _e: &ResolvedEvent) -> Result<CounterId, CounterError> {
            Err(CounterError::Unsupported(
                "counting needs Linux perf_event_open".to_string(),
            ))
        }

        fn read(&mut self, _id: CounterId) -> Result<Reading, CounterError> {
            Err(CounterError::Unsupported(
                "counting needs Linux perf_event_open".to_string(),
            ))
        }

        fn elapsed(&self) -> Duration {
            self.start.elapsed()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(pmu: &str, event: Option<&str>, config: [u64; 4], cpumask: Vec<u32>) -> ResolvedEvent {
        ResolvedEvent {
            pmu: pmu.into(),
            type_id: 1,
            event: event.map(Into::into),
            config,
            scale: None,
            unit: None,
            cpumask,
        }
    }

    #[test]
    fn names_and_cpus() {
        assert_eq!(
            event_name(&ev("software", Some("cpu-clock"), [0; 4], vec![])),
            "software/cpu-clock/"
        );
        assert_eq!(
            event_name(&ev("hisi", None, [0x10, 0, 0xffff, 0], vec![])),
            "hisi/config=0x10,config2=0xffff/"
        );
        assert_eq!(target_cpu(&ev("x", None, [0; 4], vec![64, 65])), 64);
        assert_eq!(target_cpu(&ev("x", None, [0; 4], vec![])), 0);
    }

    #[test]
    fn permission_message_explains_paranoid_and_capability() {
        let e = CounterError::Permission {
            event: "dwc_rootport_3018/rx_pcie_tlp_data_payload/".into(),
            pmu: "dwc_rootport_3018".into(),
            errno: 13,
            paranoid: Some(2),
        };
        let m = e.to_string();
        assert!(m.contains("dwc_rootport_3018/rx_pcie_tlp_data_payload/"), "{m}");
        assert!(m.contains("perf_event_paranoid is 2"), "{m}");
        assert!(m.contains("CAP_PERFMON"), "{m}");
        assert!(
            e.is_input() && e.is_permission(),
            "a PMU the user may not open is bad input (exit 2)"
        );
        let r = CounterError::Rejected {
            event: "msr/event=0x99/".into(),
            pmu: "msr".into(),
            cpu: 0,
            errno: 22,
        };
        assert!(r.to_string().contains("PMU msr refused event msr/event=0x99/"));
        assert!(r.is_input());
    }
}
