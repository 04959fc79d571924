//! What a test's DMA is cut into, built once per offset in the page. Every cut (lines, MPS,
//! MRRS, RCB) divides 4 KB, so a DMA's TLPs, their link times and the engines' busy times
//! depend only on its size, fixed for a test, and its address's offset in a 4 KB page, of which
//! a test visits few (pcie-bench's units are multiples of 64 B). The machine looks the shape
//! up instead of cutting every DMA again.

use super::{pieces, LINE};
use crate::testbed::costs::Costs;
use crate::testbed::tlp_time::{TlpTime, TlpTimes};
use crate::time::Ps;
use pcie_model::{split_completions, split_read_requests, split_writes, LinkConfig};
use std::ops::Range;

/// The period of every cut.
const PAGE: u64 = 4096;
const UNBUILT: u32 = u32::MAX;

/// A read request. Lines are counted from the DMA's first line.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// Bytes from the DMA's address.
    pub(super) offset: u64,
    pub(super) first_line: u64,
    pub(super) lines: u64,
    pub(super) mrd: TlpTime,
    /// Its occupancy of the root complex's fabric path: per request and per line fetched.
    pub(super) fabric: Ps,
    /// Link time of the DLLPs its completions earn upstream, all of them.
    pub(super) cpl_dllps: Ps,
    /// Its completions in [`Shapes::completions`].
    pub(super) completions: (u32, u32),
}

/// A completion answering a request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Completion {
    pub(super) first_line: u64,
    pub(super) lines: u64,
    /// Serialisation of its TLP downstream.
    pub(super) wire: Ps,
    /// The root complex asks for its lines one after another: the time they take.
    pub(super) ask: Ps,
    /// The device moves its lines into its memory: the time they take.
    pub(super) moved: Ps,
}

/// A posted write TLP.
#[derive(Debug, Clone, Copy)]
pub(super) struct WriteTlp {
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) mwr: TlpTime,
    /// Its occupancy of the root complex's fabric path, per line written (a DDIO allocation's
    /// share is added as the write finds its lines).
    pub(super) fabric: Ps,
}

/// One DMA's shape: the engines' prices and its TLPs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    /// Read engine occupancy of the DMA as a read.
    pub(super) read_busy: Ps,
    /// Write engine occupancy as a write.
    pub(super) write_busy: Ps,
    /// Internal bus occupancy, either way.
    pub(super) bus_busy: Ps,
    /// From the write engine's start until its TLPs may leave (the data gathered).
    pub(super) gather: Ps,
    /// Read requests in [`Shapes::requests`].
    pub(super) requests: (u32, u32),
    /// Write TLPs in [`Shapes::writes`].
    pub(super) writes: (u32, u32),
}

/// The shapes of one test's DMAs (all of `size` bytes), by offset in the page.
#[derive(Debug, Clone)]
pub(super) struct Shapes {
    size: u32,
    /// The device offset is not one the engines handle at full speed.
    slow: bool,
    by_offset: Box<[u32; PAGE as usize]>,
    shapes: Vec<Shape>,
    pub(super) requests: Vec<Request>,
    pub(super) completions: Vec<Completion>,
    pub(super) writes: Vec<WriteTlp>,
}

fn span(r: Range<usize>) -> (u32, u32) {
    (r.start as u32, r.end as u32)
}

impl Shapes {
    pub(super) fn new(size: u32, slow: bool) -> Shapes {
        Shapes {
            size,
            slow,
            by_offset: Box::new([UNBUILT; PAGE as usize]),
            shapes: Vec::new(),
            requests: Vec::new(),
            completions: Vec::new(),
            writes: Vec::new(),
        }
    }

    /// The shape of the DMA at `addr`, built on first use. By reference: a DMA reads only the
    /// fields its direction needs.
    #[inline]
    pub(super) fn get(&mut self, addr: u64, link: &LinkConfig, c: &Costs, tlp: &mut TlpTimes) -> &Shape {
        let offset = (addr % PAGE) as usize;
        let i = match self.by_offset[offset] {
            UNBUILT => self.add(offset, link, c, tlp),
            i => i,
        };
        &self.shapes[i as usize]
    }

    #[cold]
    fn add(&mut self, offset: usize, link: &LinkConfig, c: &Costs, tlp: &mut TlpTimes) -> u32 {
        let shape = self.build(offset as u64, link, c, tlp);
        let i = self.shapes.len() as u32;
        self.by_offset[offset] = i;
        self.shapes.push(shape);
        i
    }

    /// The shape of a DMA at `a`, an address in the first page: a DMA at any address with the
    /// same offset in its page is cut alike.
    fn build(&mut self, a: u64, link: &LinkConfig, c: &Costs, tlp: &mut TlpTimes) -> Shape {
        let size = self.size;
        let line_of = |x: u64| x / LINE - a / LINE;
        let lines = (size as u64).div_ceil(LINE);
        let requests_at = self.requests.len();
        for (ra, rl) in split_read_requests(link, a, size) {
            let cpls_at = self.completions.len();
            let mut cpl_dllps = 0;
            for (ca, cl) in split_completions(link, ra, rl) {
                let (cpl, lines) = (tlp.cpl(ca, cl), pieces(ca, cl, LINE as u32));
                cpl_dllps += cpl.dllps;
                self.completions.push(Completion {
                    first_line: line_of(ca),
                    lines,
                    wire: cpl.wire,
                    ask: c.line * lines,
                    moved: c.move_read * lines,
                });
            }
            let lines = pieces(ra, rl, LINE as u32);
            self.requests.push(Request {
                offset: ra - a,
                first_line: line_of(ra),
                lines,
                mrd: tlp.mrd(ra, rl),
                fabric: c.request + c.line * lines,
                cpl_dllps,
                completions: span(cpls_at..self.completions.len()),
            });
        }
        let writes_at = self.writes.len();
        for (wa, wl) in split_writes(link, a, size) {
            let lines = pieces(wa, wl, LINE as u32);
            self.writes.push(WriteTlp {
                offset: wa - a,
                len: wl,
                mwr: tlp.mwr(wa, wl),
                fabric: c.write_line * lines,
            });
        }
        let requests = &self.requests[requests_at..];
        // Requests touching every line of their MRRS-aligned block stream them faster.
        let block_lines = link.mrrs as u64 / LINE;
        let full_lines: u64 = requests.iter().map(|r| r.lines).filter(|&n| n == block_lines).sum();
        let slow = |extra: Ps| if self.slow { extra } else { 0 };
        let read_busy = c.read_dma
            + c.read_request * requests.len() as u64
            + c.read_full_line * full_lines
            // An unaligned DMA's requests can touch one line more than its size fills: all of
            // them in full blocks leaves no line at the slower price (not minus one).
            + c.read_line * lines.saturating_sub(full_lines)
            + slow(c.read_slow);
        let tlps = (self.writes.len() - writes_at) as u64;
        let write_busy = c.write_dma + c.write_tlp * tlps + c.write_line_dev * lines + slow(c.write_slow);
        Shape {
            read_busy,
            write_busy: write_busy.max(c.write_min),
            bus_busy: c.bus_dma + c.bus_line * lines,
            gather: c.gather + c.move_write * pieces(a, size, LINE as u32),
            requests: span(requests_at..self.requests.len()),
            writes: span(writes_at..self.writes.len()),
        }
    }
}
