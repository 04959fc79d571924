//! Size lists on the command line: `64,128,256`, ranges `1..4096` (inclusive) and stepped
//! ranges `64..1518:2`, mixed freely.

use crate::error::CliError;

/// Most sizes one list may expand to, so a typo cannot ask for billions of points.
const MAX_POINTS: usize = 1 << 20;

fn bad(text: &str, why: &str) -> CliError {
    CliError::Usage(format!("--sizes {text}: {why}"))
}

fn number(text: &str, whole: &str) -> Result<u32, CliError> {
    text.trim()
        .parse()
        .map_err(|_| bad(whole, &format!("'{}' is not a whole number of bytes", text.trim())))
}

/// Expand a size list, keeping the order given.
pub fn parse_sizes(text: &str) -> Result<Vec<u32>, CliError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.split_once("..") {
            None => out.push(number(part, text)?),
            Some((lo, rest)) => {
                let (hi, step) = match rest.split_once(':') {
                    Some((hi, step)) => (hi, number(step, text)?),
                    None => (rest, 1),
                };
                let (lo, hi) = (number(lo, text)?, number(hi, text)?);
                if step == 0 {
                    return Err(bad(text, "a range step must be at least 1"));
                }
                if lo > hi {
                    return Err(bad(text, &format!("range {lo}..{hi} is empty")));
                }
                if out.len() + ((hi - lo) / step) as usize >= MAX_POINTS {
                    return Err(bad(text, &format!("more than {MAX_POINTS} sizes")));
                }
                out.extend((lo..=hi).step_by(step as usize));
            }
        }
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
        assert_eq!(parse_sizes("1..4096").unwrap().len(), 4096);
    }

    #[test]
    fn errors_name_the_list() {
        let e = parse_sizes("64,abc").unwrap_err().to_string();
        assert_eq!(e, "--sizes 64,abc: 'abc' is not a whole number of bytes");
        assert!(parse_sizes("9..1").unwrap_err().to_string().contains("empty"));
        assert!(parse_sizes("1..9:0").unwrap_err().to_string().contains("step"));
        assert!(parse_sizes("").is_err());
        assert!(parse_sizes("0..4294967295")
            .unwrap_err()
            .to_string()
            .contains("more than"));
    }
}
