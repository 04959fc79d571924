//! pcieperf-refdev: the reference device program of the exec protocol (docs/backends.md).
//!
//! It drives NO real device: it serves `pcie_bench::exec::EmulatedDevice` (DMAs are memcpy in
//! host memory) with `pcie_bench::exec::serve`; what it adds are the switches below.
//!
//! Test switches (for pcieperf's own tests of failure handling):
//!   --host-cache         ask pcieperf for the host cache steps, and check the warm step happened
//!   --crash-after N      abort (SIGABRT) when test N+1 arrives
//!   --hang-after N       stop answering when test N+1 arrives
//!   --malformed-after N  answer test N+1 with a line that is not JSON
//!   --fail-after N       answer test N+1 with an error reply (and stay in step)
//!   --protocol V         claim protocol version V in the hello
//!   --bdf BDF            report BDF as the device's PCI address

use pcie_bench::exec::protocol::{BufferOffer, DeviceHello, Reply};
use pcie_bench::exec::{serve, Device, DeviceTest, EmulatedDevice};
use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

#[derive(Default)]
struct Switches {
    host_cache: bool,
    crash_after: Option<u64>,
    hang_after: Option<u64>,
    malformed_after: Option<u64>,
    fail_after: Option<u64>,
    protocol: Option<u32>,
    bdf: Option<String>,
}

fn parse_args() -> Result<Switches, String> {
    let mut s = Switches::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = || {
            let v = args.next().ok_or(format!("{a} needs a number"))?;
            v.parse::<u64>().map_err(|_| format!("{a} {v}: must be a whole number"))
        };
        match a.as_str() {
            "--host-cache" => s.host_cache = true,
            "--crash-after" => s.crash_after = Some(number()?),
            "--hang-after" => s.hang_after = Some(number()?),
            "--malformed-after" => s.malformed_after = Some(number()?),
            "--fail-after" => s.fail_after = Some(number()?),
            "--protocol" => s.protocol = Some(number()? as u32),
            "--bdf" => s.bdf = Some(args.next().ok_or("--bdf needs a PCI address")?),
            _ => {
                return Err(format!(
                    "{a}: unknown option (allowed: --host-cache, --crash-after N, --hang-after N, --malformed-after N, --fail-after N, --protocol V, --bdf BDF)"
                ))
            }
        }
    }
    Ok(s)
}

fn main() {
    let switches = parse_args().unwrap_or_else(|e| {
        eprintln!("pcieperf-refdev: {e}");
        std::process::exit(2);
    });
    let garble = Rc::new(Cell::new(false));
    let mut device = Switched {
        device: EmulatedDevice::new(switches.host_cache),
        switches,
        done: 0,
        garble: garble.clone(),
    };
    let output = Output {
        out: std::io::stdout(),
        garble,
    };
    if let Err(e) = serve(&mut device, std::io::stdin().lock(), output) {
        // A bad request or a refused hello has been answered with an error reply already.
        if let pcie_bench::exec::ServeError::Io(_) = e {
            eprintln!("pcieperf-refdev: {e}");
        }
        std::process::exit(1);
    }
}

/// The emulated device with the test switches of failure handling.
struct Switched {
    device: EmulatedDevice,
    switches: Switches,
    /// Tests answered so far.
    done: u64,
    /// Set to send the next reply as a line that is not JSON.
    garble: Rc<Cell<bool>>,
}

impl Device for Switched {
    fn hello(&mut self, buffer: Option<&BufferOffer>) -> Result<DeviceHello, String> {
        let mut hello = self.device.hello(buffer)?;
        if let Some(v) = self.switches.protocol {
            hello.protocol = v;
        }
        hello.bdf = self.switches.bdf.clone();
        Ok(hello)
    }

    fn test(&mut self, test: &DeviceTest) -> Result<Reply, String> {
        let done = self.done;
        self.done += 1;
        let s = &self.switches;
        if s.crash_after == Some(done) {
            eprintln!("pcieperf-refdev: crashing on purpose (--crash-after {done})");
            std::process::abort();
        }
        if s.hang_after == Some(done) {
            eprintln!("pcieperf-refdev: hanging on purpose (--hang-after {done})");
            loop {
                std::thread::park();
            }
        }
        if s.malformed_after == Some(done) {
            self.garble.set(true);
            return Err(String::new());
        }
        if s.fail_after == Some(done) {
            return Err(format!("DMA engine timed out on purpose (--fail-after {done})"));
        }
        self.device.test(test)
    }
}

/// Stdout, except that a reply asked to be garbled goes out as a line that is not JSON.
struct Output {
    out: std::io::Stdout,
    garble: Rc<Cell<bool>>,
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.garble.take() {
            self.out.write_all(b"DMA engine 0: {\"latency\": [1, 2,\n")?;
            return Ok(buf.len());
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
