//! A small, fast, seeded random number generator (xoshiro256++ seeded by SplitMix64), so runs
//! are reproducible bit for bit without depending on an external crate's stream stability.

/// Deterministic RNG.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)],
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Past `n` draws, as `n` calls of [`Rng::next_u64`] would go (a preparation step whose
    /// draws cannot change what it leaves).
    pub fn skip(&mut self, n: u64) {
        for _ in 0..n {
            self.next_u64();
        }
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (n > 0), without modulo bias worth measuring for n far below 2^64.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
}

/// Mix several values into one seed (stable across platforms and runs).
pub fn mix_seed(parts: &[u64]) -> u64 {
    let mut x = 0x243F_6A88_85A3_08D3u64;
    for &p in parts {
        x ^= p;
        x = splitmix(&mut x);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn uniform_ranges() {
        let mut r = Rng::new(1);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            sum += u;
            assert!(r.below(10) < 10);
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
        assert_ne!(mix_seed(&[1, 2]), mix_seed(&[2, 1]));
    }
}
