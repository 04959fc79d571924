//! The profiles' random times (triangular spreads, rare tails) and their samplers.

use crate::rng::Rng;
use crate::time::{ps, Ps};
use serde::{Deserialize, Serialize};

/// A latency that varies: triangular between `min_ns` and `max_ns`, most likely `mode_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    pub min_ns: f64,
    pub mode_ns: f64,
    pub max_ns: f64,
}

/// A rare extra delay: with probability `prob`, uniform between `min_ns` and `max_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tail {
    pub prob: f64,
    pub min_ns: f64,
    pub max_ns: f64,
}

/// so a draw is one table lookup instead of a square root per line.
#[derive(Debug, Clone)]
pub(crate) struct Sampler {
    table: Box<[Ps; SAMPLER_STEPS]>,
}

const SAMPLER_STEPS: usize = 1024;

impl Sampler {
    /// Triangular between `min_ns` and `max_ns` with mode `mode_ns`.
    pub(crate) fn triangular(s: &Spread) -> Sampler {
        Sampler::triangular_max(s, 1)
    }

    /// The largest of `n` independent triangular draws (its CDF is the triangle's to the
    /// power `n`), so a completion waiting for the slowest of its lines costs one lookup.
    pub(crate) fn triangular_max(s: &Spread, n: u32) -> Sampler {
        let (a, c, b) = (s.min_ns, s.mode_ns, s.max_ns);
        let mut table = Box::new([0; SAMPLER_STEPS]);
        for (i, slot) in table.iter_mut().enumerate() {
            let u = ((i as f64 + 0.5) / SAMPLER_STEPS as f64).powf(1.0 / n as f64);
            let ns = if b <= a {
                a
            } else if u < (c - a) / (b - a) {
                a + (u * (b - a) * (c - a)).sqrt()
            } else {
                b - ((1.0 - u) * (b - a) * (b - c)).sqrt()
            };
            *slot = ps(ns);
        }
        Sampler { table }
    }

    #[inline]
    pub(crate) fn draw(&self, rng: &mut Rng) -> Ps {
        self.table[(rng.next_u64() >> 54) as usize]
    }
}

#[inline]
pub(crate) fn draw_tail(rng: &mut Rng, t: &Tail) -> Ps {
    if rng.chance(t.prob) {
        tail_length(rng, t)
    } else {
        0
    }
}

/// How long a tail that hit lasts. Inlined although rare: a call out of line would take the
/// address of the test loop's random stream, which then could not stay in registers.
#[inline(always)]
fn tail_length(rng: &mut Rng, t: &Tail) -> Ps {
    ps(t.min_ns + rng.unit() * (t.max_ns - t.min_ns))
}
