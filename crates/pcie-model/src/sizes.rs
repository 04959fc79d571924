//! Size lists as users write them: `64,128,256`, inclusive ranges `1..4096` and stepped ranges
//! `64..1518:2`, mixed freely. Any text is answered with a list or an error, never a panic,
//! and no list grows past [`MAX_SIZES`].

use std::fmt;

/// Most sizes one list may expand to, so a typo cannot ask for billions of points.
pub const MAX_SIZES: usize = 1 << 20;

/// What is wrong with a size list (the caller names the list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeListError {
    /// A part that is not a whole number from 0 to 4294967295 (trimmed).
    NotANumber(String),
    /// A range step of 0.
    ZeroStep,
    /// A range whose start is above its end.
    EmptyRange(u32, u32),
    /// The list expands to more than [`MAX_SIZES`] sizes.
    TooMany,
}

impl fmt::Display for SizeListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeListError::NotANumber(text) => write!(f, "'{text}' is not a whole number of bytes"),
            SizeListError::ZeroStep => write!(f, "a range step must be at least 1"),
            SizeListError::EmptyRange(lo, hi) => write!(f, "range {lo}..{hi} is empty"),
            SizeListError::TooMany => write!(f, "more than {MAX_SIZES} sizes"),
        }
    }
}

impl std::error::Error for SizeListError {}

fn number(text: &str) -> Result<u32, SizeListError> {
    let text = text.trim();
    text.parse().map_err(|_| SizeListError::NotANumber(text.to_string()))
}

/// Expand a size list, keeping the order given. Sizes are not checked against what a model
/// accepts (0 parses); that is the model's business.
pub fn parse_sizes(text: &str) -> Result<Vec<u32>, SizeListError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let (lo, hi, step) = match part.split_once("..") {
            None => {
                let n = number(part)?;
                (n, n, 1)
            }
            Some((lo, rest)) => {
                let (hi, step) = match rest.split_once(':') {
                    Some((hi, step)) => (hi, number(step)?),
                    None => (rest, 1),
                };
                (number(lo)?, number(hi)?, step)
            }
        };
        if step == 0 {
            return Err(SizeListError::ZeroStep);
        }
        if lo > hi {
            return Err(SizeListError::EmptyRange(lo, hi));
        }
        // In u64: at most 2^32 points plus a list already bounded by MAX_SIZES.
        let points = u64::from(hi - lo) / u64::from(step) + 1;
        if out.len() as u64 + points > MAX_SIZES as u64 {
            return Err(SizeListError::TooMany);
        }
        out.extend((lo..=hi).step_by(step as usize));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_steps() {
        assert_eq!(parse_sizes("64,128").unwrap(), vec![64, 128]);
        assert_eq!(parse_sizes("1..4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_sizes("64..256:64,1500").unwrap(), vec![64, 128, 192, 256, 1500]);
        assert_eq!(parse_sizes(" 1 .. 3 : 2 , 7 ").unwrap(), vec![1, 3, 7]);
        assert_eq!(parse_sizes("1..4096").unwrap().len(), 4096);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = |text| parse_sizes(text).unwrap_err().to_string();
        assert_eq!(e("64,abc"), "'abc' is not a whole number of bytes");
        assert_eq!(e("9..1"), "range 9..1 is empty");
        assert_eq!(e("1..9:0"), "a range step must be at least 1");
        assert_eq!(e(""), "'' is not a whole number of bytes");
        assert_eq!(e("0..4294967295"), "more than 1048576 sizes");
    }

    #[test]
    fn hostile_lists_are_answered_without_panic() {
        let max = u32::MAX;
        assert_eq!(parse_sizes("4294967295..4294967295").unwrap(), vec![max]);
        assert_eq!(parse_sizes("0..4294967295:4294967295").unwrap(), vec![0, max]);
        assert_eq!(parse_sizes("5..9:4294967295").unwrap(), vec![5]);
        assert_eq!(parse_sizes("4294967294..4294967295:1").unwrap(), vec![max - 1, max]);
        assert_eq!(parse_sizes("1..4294967295:1"), Err(SizeListError::TooMany));
        assert_eq!(
            parse_sizes("1..9:4294967296"),
            Err(SizeListError::NotANumber("4294967296".into()))
        );
        for bad in [
            "..", "1..", "..5", ":", "1..5:", "1,,2", ",", " ", "1..2..3", "1:2", "-1", "+", "６４", "1e3", "\u{0}",
        ] {
            assert!(parse_sizes(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_point_limit_counts_every_part() {
        assert_eq!(parse_sizes("1..1048576").unwrap().len(), MAX_SIZES);
        assert_eq!(parse_sizes("1..1048576,5"), Err(SizeListError::TooMany));
        assert_eq!(parse_sizes("1..1048575,5").unwrap().len(), MAX_SIZES);
        let many = vec!["7"; MAX_SIZES + 1].join(",");
        assert_eq!(parse_sizes(&many), Err(SizeListError::TooMany));
        assert_eq!(parse_sizes(&many[2..]).unwrap().len(), MAX_SIZES);
    }
}
