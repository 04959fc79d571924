//! Polyline geometry in pixel space: clip to the plot area and drop points that change nothing
//! visible, so 4096-point sweeps stay small files and out-of-range data never leaves the plot.

/// A point in SVG user units (pixels).
pub(crate) type Pt = (f64, f64);

/// An axis-aligned rectangle, `x0 ≤ x1` and `y0 ≤ y1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn contains(&self, p: Pt) -> bool {
        p.0 >= self.x0 && p.0 <= self.x1 && p.1 >= self.y0 && p.1 <= self.y1
    }
}

/// Clips segment `a`–`b` to `r` (Liang–Barsky); `None` if no part of it is inside.
pub(crate) fn clip_segment(a: Pt, b: Pt, r: &Rect) -> Option<(Pt, Pt)> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0_f64, 1.0_f64);
    for (p, q) in [(-dx, a.0 - r.x0), (dx, r.x1 - a.0), (-dy, a.1 - r.y0), (dy, r.y1 - a.1)] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| (a.0 + t * dx, a.1 + t * dy);
    Some((if t0 > 0.0 { at(t0) } else { a }, if t1 < 1.0 { at(t1) } else { b }))
}

/// Clips a polyline (`None` entries are gaps) to `r`; returns the visible runs of two or more points.
pub(crate) fn clip_polyline(points: &[Option<Pt>], r: &Rect) -> Vec<Vec<Pt>> {
    let mut runs = Vec::new();
    let mut run: Vec<Pt> = Vec::new();
    let mut flush = |run: &mut Vec<Pt>| {
        if run.len() >= 2 {
            runs.push(std::mem::take(run));
        }
        run.clear();
    };
    for pair in points.windows(2) {
        let (Some(a), Some(b)) = (pair[0], pair[1]) else {
            flush(&mut run);
            continue;
        };
        match clip_segment(a, b, r) {
            Some((ca, cb)) => {
                if run.last() != Some(&ca) {
                    flush(&mut run);
                    run.push(ca);
                }
                run.push(cb);
                if cb != b {
                    flush(&mut run);
                }
            }
            None => flush(&mut run),
        }
    }
    flush(&mut run);
    runs
}

/// Drops points that deviate less than `tolerance` from the simplified line (Ramer–Douglas–Peucker,
/// after a linear pass that merges points closer than `tolerance`). Keeps both ends and every
/// feature larger than the tolerance, such as each drop of a saw-tooth.
pub(crate) fn simplify(run: &[Pt], tolerance: f64) -> Vec<Pt> {
    let mut dense: Vec<Pt> = Vec::with_capacity(run.len());
    for (i, &p) in run.iter().enumerate() {
        let last = i + 1 == run.len();
        match dense.last() {
            Some(&q) if !last && dist(p, q) < tolerance => {}
            _ => dense.push(p),
        }
    }
    if dense.len() <= 2 {
        return dense;
    }
    let mut keep = vec![false; dense.len()];
    let end = dense.len() - 1;
    keep[0] = true;
    keep[end] = true;
    let mut stack = vec![(0, end)];
    while let Some((i, j)) = stack.pop() {
        let mut best = (0.0, 0);
        for (k, &p) in dense.iter().enumerate().take(j).skip(i + 1) {
            let d = segment_distance(p, dense[i], dense[j]);
            if d > best.0 {
                best = (d, k);
            }
        }
        if best.0 > tolerance {
            keep[best.1] = true;
            stack.push((i, best.1));
            stack.push((best.1, j));
        }
    }
    dense
        .into_iter()
        .zip(keep)
        .filter_map(|(p, k)| k.then_some(p))
        .collect()
}

fn dist(a: Pt, b: Pt) -> f64 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

fn segment_distance(p: Pt, a: Pt, b: Pt) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    if len2 == 0.0 {
        return dist(p, a);
    }
    let t = (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0);
    dist(p, (a.0 + t * dx, a.1 + t * dy))
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Rect = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 10.0,
        y1: 10.0,
    };

    #[test]
    fn segments_are_cut_at_the_border() {
        assert_eq!(
            clip_segment((-5.0, 5.0), (5.0, 5.0), &R),
            Some(((0.0, 5.0), (5.0, 5.0)))
        );
        assert_eq!(clip_segment((-5.0, 20.0), (5.0, 20.0), &R), None);
        assert_eq!(clip_segment((2.0, 2.0), (3.0, 3.0), &R), Some(((2.0, 2.0), (3.0, 3.0))));
    }

    #[test]
    fn polylines_split_where_they_leave_the_plot_or_have_gaps() {
        let pts = [
            Some((1.0, 1.0)),
            Some((2.0, 2.0)),
            Some((2.0, 20.0)), // leaves through the bottom
            Some((3.0, 2.0)),  // comes back
            Some((4.0, 2.0)),
            None, // gap
            Some((5.0, 5.0)),
            Some((6.0, 5.0)),
        ];
        let runs = clip_polyline(&pts, &R);
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert_eq!(runs[0], [(1.0, 1.0), (2.0, 2.0), (2.0, 10.0)]);
        assert_eq!(runs[1].last(), Some(&(4.0, 2.0)));
        assert_eq!(runs[2], [(5.0, 5.0), (6.0, 5.0)]);
    }

    #[test]
    fn simplify_keeps_ends_and_corners_and_drops_collinear_points() {
        let mut run: Vec<Pt> = (0..=100).map(|i| (f64::from(i), 0.0)).collect();
        run.extend((1..=100).map(|i| (100.0, f64::from(i))));
        assert_eq!(simplify(&run, 0.1), [(0.0, 0.0), (100.0, 0.0), (100.0, 100.0)]);
        // A saw-tooth keeps every drop.
        let saw: Vec<Pt> = (0..400).map(|i| (f64::from(i), f64::from(i % 100))).collect();
        let s = simplify(&saw, 0.1);
        assert_eq!(s.len(), 8, "{s:?}");
    }
}
