//! Input mutation: the edits that turn a valid file or argument into a hostile one.

/// A small seeded generator: runs are reproducible from their seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Numbers that break arithmetic: type limits and one past them, zero and signs, floats that
/// overflow, underflow or are not numbers, and forms some parsers accept and others do not.
pub const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "00",
    "0.0",
    "0.5",
    "1.5",
    "-0.5",
    "1e300",
    "-1e300",
    "1e-300",
    "1e12",
    "1e19",
    "1e20",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "infinity",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "99999999999999999999999999",
    "0x10",
    "1_000",
    "+1",
    "1.",
    ".5",
    "5e",
    "",
];

/// Bytes of a number as they appear in text (digits, sign, point, exponent).
fn numeric(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E' | b'_' | b'x')
}

/// Spans of `input` that look like numbers (start with a digit, sign or point).
fn number_spans(input: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < input.len() {
        if input[i].is_ascii_digit() || (matches!(input[i], b'-' | b'+' | b'.') && i + 1 < input.len()) {
            let start = i;
            while i < input.len() && numeric(input[i]) {
                i += 1;
            }
            if input[start..i].iter().any(u8::is_ascii_digit) {
                spans.push((start, i));
            }
            i = i.max(start + 1);
        } else {
            i += 1;
        }
    }
    spans
}

/// A random span of `input` (possibly empty).
fn span(input: &[u8], rng: &mut SplitMix64) -> (usize, usize) {
    let a = rng.below(input.len() + 1);
    let len = match rng.below(4) {
        0 => rng.below(input.len() - a + 1),
        _ => rng.below(((input.len() - a) / 8).max(1) + 1).min(input.len() - a),
    };
    (a, a + len)
}

/// One to four edits of `input`; `others` are inputs to splice from, `dictionary` the format's
/// tokens.
pub fn mutate(input: &[u8], others: &[Vec<u8>], dictionary: &[&str], rng: &mut SplitMix64) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(9) {
            // A number replaced by a hostile one: the most productive edit on data files.
            0..=2 => {
                let spans = number_spans(&out);
                if spans.is_empty() {
                    continue;
                }
                let (a, b) = *rng.pick(&spans);
                out.splice(a..b, rng.pick(HOSTILE_NUMBERS).bytes());
            }
            3 => {
                let at = rng.below(out.len() + 1);
                let token = if dictionary.is_empty() || rng.below(3) == 0 {
                    *rng.pick(HOSTILE_NUMBERS)
                } else {
                    *rng.pick(dictionary)
                };
                out.splice(at..at, token.bytes());
            }
            4 => {
                let (a, b) = span(&out, rng);
                out.drain(a..b);
            }
            5 => {
                // A span repeated: duplicate keys, lines, list items.
                let (a, b) = span(&out, rng);
                let copy = out[a..b].to_vec();
                let at = rng.below(out.len() + 1);
                out.splice(at..at, copy);
            }
            6 => {
                if out.is_empty() {
                    continue;
                }
                let at = rng.below(out.len());
                out[at] = match rng.below(3) {
                    0 => rng.next_u64() as u8,
                    1 => out[at] ^ (1 << rng.below(8)),
                    _ => *rng.pick(b"\0\n\r\t ,;:=./\"'[]{}#-"),
                };
            }
            7 => {
                // Splice: this input's head with another's tail.
                if others.is_empty() {
                    continue;
                }
                let other = rng.pick(others);
                let cut = rng.below(out.len() + 1);
                let from = rng.below(other.len() + 1);
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            _ => {
                // A long run: huge lines and fields.
                let (a, b) = span(&out, rng);
                let piece = out[a..b].to_vec();
                let times = 1 + rng.below(64);
                let at = rng.below(out.len() + 1);
                out.splice(at..at, piece.repeat(times));
            }
        }
    }
    out.truncate(1 << 16);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_numbers_in_text() {
        let spans = number_spans(b"mps = 256\nlat = -1.5e3 # x9");
        let found: Vec<&[u8]> = spans
            .iter()
            .map(|&(a, b)| &b"mps = 256\nlat = -1.5e3 # x9"[a..b])
            .collect();
        assert_eq!(found, vec![&b"256"[..], b"-1.5e3", b"9"]);
    }

    #[test]
    fn same_seed_same_mutants_and_they_differ() {
        let seed = b"size = 64\nwindow = 8192\n".to_vec();
        let run = |s| {
            let mut rng = SplitMix64::new(s);
            (0..200)
                .map(|_| mutate(&seed, &[], &["x"], &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        let mutants = run(3);
        assert!(mutants.iter().filter(|m| **m != seed).count() > 150);
        assert!(mutants
            .iter()
            .any(|m| String::from_utf8_lossy(m).contains("18446744073709551615")));
    }
}
