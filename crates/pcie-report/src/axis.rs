//! Scales, ranges and ticks: turns data extents into an interval a reader can read values off.
//!
//! Linear axes use 1-2-5 steps; log axes use decades with minor ticks at 2..9. Tick values are built
//! from integers and powers of ten so labels never show float noise such as 0.30000000000000004.

use crate::chart::{Axis, Scale};

/// Slack for comparing tick positions with range ends, relative to one step.
const EPS: f64 = 1e-9;

/// Log axes spanning more decades than this get no minor ticks (they would blur into a band).
const MAX_DECADES_WITH_MINORS: i32 = 8;

/// Mantissas to label on log axes, from richest to sparsest.
const LOG_LABEL_SETS: [&[i32]; 4] = [&[1, 2, 3, 4, 5, 6, 7, 8, 9], &[1, 2, 3, 5], &[1, 2, 5], &[1]];

impl Scale {
    /// Whether the scale can place `v` (finite, and positive on a log scale).
    pub(crate) fn accepts(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }
}

/// The interval to show before tick rounding; `auto_*` ends came from the data and may be rounded
/// outward to the next tick, pinned ends are kept exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    pub lo: f64,
    pub hi: f64,
    pub auto_lo: bool,
    pub auto_hi: bool,
}

/// One tick mark; log minor ticks usually carry no label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tick {
    pub value: f64,
    pub label: Option<String>,
    pub major: bool,
}

/// An axis after ranging: the interval shown and its ticks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ticked {
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<Tick>,
}

impl Ticked {
    /// Position of `v` along the axis, 0 at `min` and 1 at `max`; `None` if the scale cannot show it.
    pub fn fraction(&self, v: f64) -> Option<f64> {
        if !self.scale.accepts(v) {
            return None;
        }
        let f = match self.scale {
            Scale::Linear => (v - self.min) / (self.max - self.min),
            Scale::Log10 => (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10()),
        };
        f.is_finite().then_some(f)
    }

    /// The labelled ticks, in order.
    pub fn labels(&self) -> impl Iterator<Item = (f64, &str)> {
        self.ticks
            .iter()
            .filter_map(|t| t.label.as_deref().map(|l| (t.value, l)))
    }
}

/// How to fit an automatic range around the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Fit {
    /// Start a one-signed linear axis at 0 when that adds at most half the data range of empty
    /// space, so bandwidth curves compare by height without wasting the plot (used for y).
    pub zero_baseline: bool,
    /// Leave a little room beyond the data so markers and error-bar caps do not sit on the frame;
    /// the padded ends are kept as they are, not rounded out to a tick.
    pub pad: bool,
}

/// Share of the data range (in scale units) added on each side when padding.
const PAD_FRACTION: f64 = 0.03;

/// Chooses the interval to show from the axis settings and the data extent (`None`: no data).
pub(crate) fn span(axis: &Axis, data: Option<(f64, f64)>, fit: Fit) -> Span {
    let scale = axis.scale;
    let linear = scale == Scale::Linear;
    let zero_baseline = fit.zero_baseline;
    let data = data.map(|(lo, hi)| if fit.pad { pad(scale, lo, hi) } else { (lo, hi) });
    let (lo, hi) = match data {
        None if linear => (0.0, 1.0),
        None => (1.0, 10.0),
        Some((lo, hi)) if lo < hi => {
            if linear && zero_baseline && lo > 0.0 && lo <= 0.5 * (hi - lo) {
                (0.0, hi)
            } else if linear && zero_baseline && hi < 0.0 && -hi <= 0.5 * (hi - lo) {
                (lo, 0.0)
            } else {
                (lo, hi)
            }
        }
        // A single value: give it room, and keep the baseline for a flat positive curve.
        Some((v, _)) => match scale {
            Scale::Log10 => (v / 2.0, v * 2.0),
            Scale::Linear if v == 0.0 => (0.0, 1.0),
            Scale::Linear if zero_baseline && v > 0.0 => (0.0, v * 1.1),
            Scale::Linear if zero_baseline => (v * 1.1, 0.0),
            Scale::Linear => (v - v.abs() * 0.1, v + v.abs() * 0.1),
        },
    };

    let pin = |v: Option<f64>| v.filter(|v| scale.accepts(*v));
    let (pin_lo, pin_hi) = match (pin(axis.min), pin(axis.max)) {
        (Some(a), Some(b)) if a >= b => (None, None),
        pins => pins,
    };
    // Padded ends already leave room: rounding them out again to a tick could waste a sixth of
    // the plot, so they stay as they are (unless they came from no data at all).
    let round_out = !fit.pad || data.is_none();
    let mut span = Span {
        lo: pin_lo.unwrap_or(lo),
        hi: pin_hi.unwrap_or(hi),
        auto_lo: pin_lo.is_none() && round_out,
        auto_hi: pin_hi.is_none() && round_out,
    };
    // One pinned end beyond all the data: open the other end away from it.
    if span.lo >= span.hi {
        if pin_hi.is_none() {
            span.hi = match scale {
                Scale::Linear => span.lo + span.lo.abs().max(1.0),
                Scale::Log10 => span.lo * 10.0,
            };
        } else {
            span.lo = match scale {
                Scale::Linear => span.hi - span.hi.abs().max(1.0),
                Scale::Log10 => span.hi / 10.0,
            };
        }
    }
    span
}

/// Widens `lo..hi` by [`PAD_FRACTION`] on both sides, without crossing zero on a linear scale
/// (sizes and counts should not get a negative axis).
fn pad(scale: Scale, lo: f64, hi: f64) -> (f64, f64) {
    match scale {
        Scale::Linear => {
            let d = (hi - lo) * PAD_FRACTION;
            let (plo, phi) = (lo - d, hi + d);
            let plo = if lo >= 0.0 && plo < 0.0 { 0.0 } else { plo };
            let phi = if hi <= 0.0 && phi > 0.0 { 0.0 } else { phi };
            if plo.is_finite() && phi.is_finite() {
                (plo, phi)
            } else {
                (lo, hi)
            }
        }
        Scale::Log10 => {
            let f = (hi / lo).powf(PAD_FRACTION);
            let (plo, phi) = (lo / f, hi * f);
            if plo > 0.0 && phi.is_finite() {
                (plo, phi)
            } else {
                (lo, hi)
            }
        }
    }
}

/// Ticks for `span` with at most about `target` intervals between labels; auto ends are rounded
/// outward to the nearest tick.
pub(crate) fn ticks(scale: Scale, span: Span, target: usize) -> Ticked {
    match scale {
        Scale::Linear => linear_ticks(span, target),
        Scale::Log10 => log_ticks(span, target),
    }
}

fn linear_ticks(span: Span, target: usize) -> Ticked {
    let target = target.max(2) as f64;
    let width = span.hi - span.lo;
    let first_exp = (width / target).log10().floor();
    let first_exp = if first_exp.is_finite() { first_exp as i32 - 1 } else { 0 };
    for exp in first_exp..first_exp.saturating_add(40) {
        for m in [1.0, 2.0, 5.0] {
            let step = tick_value(m, exp);
            let k_lo = if span.auto_lo {
                (span.lo / step + EPS).floor()
            } else {
                (span.lo / step - EPS).ceil()
            };
            let k_hi = if span.auto_hi {
                (span.hi / step - EPS).ceil()
            } else {
                (span.hi / step + EPS).floor()
            };
            if !(k_lo.is_finite() && k_hi.is_finite()) || k_hi - k_lo > target {
                continue;
            }
            let value = |k: f64| tick_value(k * m, exp);
            // One suffix for the whole axis, chosen by its largest label: 0.5G, 1G, 1.5G.
            let unit = value(k_lo).abs().max(value(k_hi).abs());
            let mut ticks = Vec::new();
            let mut k = k_lo;
            while k <= k_hi {
                let v = value(k);
                ticks.push(Tick {
                    value: v,
                    label: Some(label(v, exp, unit)),
                    major: true,
                });
                k += 1.0;
            }
            return Ticked {
                scale: Scale::Linear,
                min: if span.auto_lo { value(k_lo) } else { span.lo },
                max: if span.auto_hi { value(k_hi) } else { span.hi },
                ticks,
            };
        }
    }
    // Only reachable for ranges at the edge of f64; label the ends rather than loop.
    let ends = [span.lo, span.hi].map(|v| Tick {
        value: v,
        label: Some(format!("{v:e}")),
        major: true,
    });
    Ticked {
        scale: Scale::Linear,
        min: span.lo,
        max: span.hi,
        ticks: ends.to_vec(),
    }
}

fn log_ticks(span: Span, target: usize) -> Ticked {
    let lo = if span.auto_lo {
        let e = floor_exp10(span.lo);
        tick_value((span.lo / pow10(e) + EPS).floor().max(1.0), e)
    } else {
        span.lo
    };
    let hi = if span.auto_hi {
        let e = floor_exp10(span.hi);
        tick_value((span.hi / pow10(e) - EPS).ceil(), e)
    } else {
        span.hi
    };
    let (e_lo, e_hi) = (floor_exp10(lo), floor_exp10(hi));
    let minors = e_hi - e_lo <= MAX_DECADES_WITH_MINORS;
    let mut ticks = Vec::new();
    for e in e_lo..=e_hi {
        for m in 1..=9 {
            if m > 1 && !minors {
                break;
            }
            let v = tick_value(f64::from(m), e);
            if v >= lo * (1.0 - EPS) && v <= hi * (1.0 + EPS) {
                ticks.push(Tick {
                    value: v,
                    label: None,
                    major: m == 1,
                });
            }
        }
    }

    // Label the richest set of mantissas that fits (short axes read best with 2, 3, 5 labelled
    // too); if even decades are too many, label every n-th decade.
    let mantissa = |v: f64| (v / pow10(floor_exp10(v))).round() as i32;
    let limit = target.max(1) + 1;
    let sets = LOG_LABEL_SETS.map(|set| -> Vec<usize> {
        (0..ticks.len())
            .filter(|&i| set.contains(&mantissa(ticks[i].value)))
            .collect()
    });
    let usable = || sets.iter().filter(|s| s.len() >= 2);
    let Some(coarsest) = usable().next_back() else {
        // Not even two of 1..9 · 10ⁿ inside the range (say 1000..1010): use linear ticks.
        let pinned = Span {
            lo,
            hi,
            auto_lo: false,
            auto_hi: false,
        };
        let linear = linear_ticks(pinned, target);
        return Ticked {
            scale: Scale::Log10,
            min: lo,
            max: hi,
            ..linear
        };
    };
    let (chosen, every) = match usable().find(|s| s.len() <= limit) {
        Some(set) => (set, 1),
        None => (coarsest, coarsest.len().div_ceil(limit)),
    };
    let decades_only = chosen.iter().all(|&i| ticks[i].major);
    for (rank, &i) in chosen.iter().enumerate() {
        let v = ticks[i].value;
        let e = floor_exp10(v);
        // Thinned decades stay on round exponents (10⁰, 10³, 10⁶ …) whatever the range.
        let keep = if decades_only {
            e.rem_euclid(every as i32) == 0
        } else {
            rank % every == 0
        };
        if keep {
            ticks[i].label = Some(label(v, e, v));
        }
    }
    Ticked {
        scale: Scale::Log10,
        min: lo,
        max: hi,
        ticks,
    }
}

/// `n · 10^exp` computed without float noise for integer `n`: 3 · 10⁻¹ is 0.3, not 0.30000000000000004.
fn tick_value(n: f64, exp: i32) -> f64 {
    let v = if exp >= 0 { n * pow10(exp) } else { n / pow10(-exp) };
    v + 0.0 // no negative zero
}

/// The correctly rounded `10^exp`.
fn pow10(exp: i32) -> f64 {
    format!("1e{exp}").parse().unwrap_or(f64::NAN)
}

/// The exponent of the largest power of ten ≤ `v` (`v` > 0, finite).
fn floor_exp10(v: f64) -> i32 {
    let mut e = v.log10().floor() as i32;
    if pow10(e) > v {
        e -= 1;
    } else if pow10(e + 1) <= v {
        e += 1;
    }
    e
}

/// Formats a tick value known to be a multiple of `10^exp`: plain digits, or with an SI suffix
/// (k, M, G, T) chosen by `unit` (the value itself, or the axis' largest label) from 10 000 up, so
/// wide axes keep short labels.
pub(crate) fn label(value: f64, exp: i32, unit: f64) -> String {
    let a = unit.abs();
    let (shift, suffix) = match () {
        _ if a >= 1e12 => (12, "T"),
        _ if a >= 1e9 => (9, "G"),
        _ if a >= 1e6 => (6, "M"),
        _ if a >= 1e4 => (3, "k"),
        _ => (0, ""),
    };
    let decimals = (shift - exp).clamp(0, 12) as usize;
    let mut s = format!("{:.*}", decimals, value / pow10(shift));
    if !suffix.is_empty() && s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s.remove(0);
    }
    if !suffix.is_empty() && s != "0" {
        s.push_str(suffix);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIGHT: Fit = Fit {
        zero_baseline: false,
        pad: false,
    };
    const BASELINE: Fit = Fit {
        zero_baseline: true,
        pad: false,
    };

    fn auto(lo: f64, hi: f64) -> Span {
        Span {
            lo,
            hi,
            auto_lo: true,
            auto_hi: true,
        }
    }

    fn values(t: &Ticked) -> Vec<f64> {
        t.ticks.iter().map(|t| t.value).collect()
    }

    fn labels(t: &Ticked) -> Vec<&str> {
        t.labels().map(|(_, l)| l).collect()
    }

    #[test]
    fn linear_rounds_out_to_nice_steps() {
        let t = ticks(Scale::Linear, auto(0.0, 57.3), 6);
        assert_eq!(values(&t), [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        assert_eq!((t.min, t.max), (0.0, 60.0));
        assert_eq!(labels(&t), ["0", "10", "20", "30", "40", "50", "60"]);
    }

    #[test]
    fn linear_steps_are_one_two_five() {
        for (hi, target) in [(1.0, 5), (7.3, 8), (0.031, 6), (12345.0, 7), (4096.0, 9)] {
            let t = ticks(Scale::Linear, auto(0.0, hi), target);
            let step = t.ticks[1].value - t.ticks[0].value;
            let exp = step.log10().floor();
            let mantissa = (step / 10f64.powf(exp) * 1e6).round() / 1e6;
            assert!([1.0, 2.0, 5.0].contains(&mantissa), "{hi}: step {step}");
            assert!(t.ticks.len() - 1 <= target, "{hi}: {:?}", values(&t));
            assert!(t.max >= hi && t.min <= 0.0);
        }
    }

    #[test]
    fn pinned_ends_are_kept_and_ticks_stay_inside() {
        let s = Span {
            lo: 0.0,
            hi: 4096.0,
            auto_lo: false,
            auto_hi: false,
        };
        let t = ticks(Scale::Linear, s, 9);
        assert_eq!((t.min, t.max), (0.0, 4096.0));
        assert_eq!(values(&t), (0..=8).map(|k| k as f64 * 500.0).collect::<Vec<_>>());
    }

    #[test]
    fn labels_have_no_float_noise() {
        let t = ticks(Scale::Linear, auto(0.0, 0.9), 10);
        assert_eq!(
            labels(&t),
            ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]
        );
        assert_eq!(t.ticks[3].value, 0.3);
        let t = ticks(Scale::Linear, auto(-0.25, 0.25), 4);
        assert_eq!(labels(&t), ["-0.4", "-0.2", "0.0", "0.2", "0.4"]);
    }

    #[test]
    fn labels_use_si_suffixes_from_ten_thousand() {
        let own = |v: f64, exp: i32| label(v, exp, v);
        assert_eq!(own(64.0, 0), "64");
        assert_eq!(own(4096.0, 0), "4096");
        assert_eq!(own(9000.0, 3), "9000");
        assert_eq!(own(10_000.0, 4), "10k");
        assert_eq!(own(12_500.0, 2), "12.5k");
        assert_eq!(own(2_000_000.0, 6), "2M");
        assert_eq!(own(40e9, 9), "40G");
        assert_eq!(own(-20_000.0, 4), "-20k");
        assert_eq!(own(0.05, -2), "0.05");
        // A linear axis shares one suffix.
        let t = ticks(Scale::Linear, auto(0.0, 3.6e9), 8);
        assert_eq!(
            labels(&t),
            ["0", "0.5G", "1G", "1.5G", "2G", "2.5G", "3G", "3.5G", "4G"]
        );
        let t = ticks(Scale::Linear, auto(0.0, 9000.0), 5);
        assert_eq!(labels(&t), ["0", "2k", "4k", "6k", "8k", "10k"]);
        let t = ticks(Scale::Linear, auto(0.0, 7500.0), 4);
        assert_eq!(labels(&t), ["0", "2000", "4000", "6000", "8000"]);
    }

    #[test]
    fn log_ticks_are_decades_with_minors() {
        let t = ticks(Scale::Log10, auto(1.0, 4096.0), 8);
        assert_eq!((t.min, t.max), (1.0, 5000.0));
        assert_eq!(labels(&t), ["1", "10", "100", "1000"]);
        let majors: Vec<f64> = t.ticks.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(majors, [1.0, 10.0, 100.0, 1000.0]);
        let minors: Vec<f64> = t.ticks.iter().filter(|t| !t.major).map(|t| t.value).collect();
        assert_eq!(minors.len(), 8 * 3 + 4); // 2..9 per decade, then 2000..5000
        assert!(minors.contains(&0.2e4) && minors.contains(&500.0));
    }

    #[test]
    fn short_log_axis_labels_minor_ticks() {
        let t = ticks(Scale::Log10, auto(480.0, 5200.0), 8);
        assert_eq!((t.min, t.max), (400.0, 6000.0));
        assert_eq!(labels(&t), ["500", "1000", "2000", "3000", "5000"]);
        let t = ticks(Scale::Log10, auto(480.0, 5200.0), 3);
        assert_eq!(labels(&t), ["500", "1000", "2000", "5000"]);
        let t = ticks(Scale::Log10, auto(500.0, 2500.0), 9);
        assert_eq!(labels(&t), ["500", "600", "700", "800", "900", "1000", "2000", "3000"]);
        let t = ticks(Scale::Log10, auto(8.0, 2048.0), 9);
        assert_eq!(labels(&t), ["10", "20", "50", "100", "200", "500", "1000", "2000"]);
        let t = ticks(Scale::Log10, auto(1000.0, 1010.0), 8);
        assert!(labels(&t).len() >= 2, "{:?}", labels(&t));
    }

    #[test]
    fn crowded_log_labels_are_thinned() {
        let t = ticks(Scale::Log10, auto(1e-3, 1e12), 5);
        assert_eq!(labels(&t), ["0.001", "1", "1000", "1M", "1G", "1T"]);
        assert!(t.ticks.iter().all(|t| t.major), "no minors over 15 decades");
    }

    #[test]
    fn span_starts_bandwidth_at_zero_but_not_narrow_latency() {
        let y = Axis::linear("y");
        assert_eq!(span(&y, Some((2.3, 57.0)), BASELINE).lo, 0.0);
        assert_eq!(span(&y, Some((900.0, 1100.0)), BASELINE).lo, 900.0);
        assert_eq!(span(&y, Some((-57.0, -2.0)), BASELINE).hi, 0.0);
        assert_eq!(span(&y, Some((2.3, 57.0)), TIGHT).lo, 2.3);
    }

    #[test]
    fn padding_leaves_room_but_keeps_sizes_non_negative() {
        let pad = Fit {
            zero_baseline: false,
            pad: true,
        };
        let s = span(&Axis::linear("x"), Some((-0.03, 0.03)), pad);
        assert!(s.lo < -0.03 && s.hi > 0.03);
        let s = span(&Axis::linear("x"), Some((0.0, 29.0)), pad);
        assert!(s.lo == 0.0 && s.hi > 29.0);
        let s = span(&Axis::log10("x"), Some((8.0, 2048.0)), pad);
        assert!(s.lo < 8.0 && s.lo > 6.0 && s.hi > 2048.0);
        let t = ticks(Scale::Log10, s, 9);
        assert_eq!((t.min, t.max), (s.lo, s.hi), "padded ends are not rounded again");
    }

    #[test]
    fn span_handles_degenerate_and_invalid_settings() {
        let y = Axis::linear("y");
        let s = span(&y, Some((50.0, 50.0)), BASELINE);
        assert!(s.lo == 0.0 && s.hi > 50.0);
        let s = span(&y, None, BASELINE);
        assert_eq!((s.lo, s.hi), (0.0, 1.0));
        let log = Axis::log10("x");
        let s = span(&log, Some((64.0, 64.0)), TIGHT);
        assert!(s.lo < 64.0 && s.hi > 64.0);
        // A non-positive pin on a log axis and a reversed pin pair are ignored.
        let s = span(&log.clone().with_range(0.0, 100.0), Some((1.0, 10.0)), TIGHT);
        assert_eq!((s.lo, s.auto_lo, s.hi, s.auto_hi), (1.0, true, 100.0, false));
        let s = span(&y.clone().with_range(5.0, 1.0), Some((2.0, 3.0)), TIGHT);
        assert!(s.auto_lo && s.auto_hi);
        // A pinned min above all the data opens the max.
        let pinned = Axis {
            min: Some(100.0),
            ..Axis::linear("y")
        };
        let s = span(&pinned, Some((1.0, 10.0)), TIGHT);
        assert!(s.lo == 100.0 && s.hi > 100.0);
    }

    #[test]
    fn fraction_maps_ends_and_rejects_unplaceable_values() {
        let t = ticks(Scale::Log10, auto(1.0, 1000.0), 5);
        assert_eq!(t.fraction(1.0), Some(0.0));
        assert!((t.fraction(1000.0).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(t.fraction(0.0), None);
        assert_eq!(t.fraction(-1.0), None);
        assert_eq!(t.fraction(f64::NAN), None);
        let t = ticks(Scale::Linear, auto(0.0, 10.0), 5);
        assert_eq!(t.fraction(5.0), Some(0.5));
        assert_eq!(t.fraction(f64::INFINITY), None);
    }
}
