//! Byte counts as people write windows: `4096`, `8K`, `1.5M`, `64MiB` (binary multiples).

/// Parses a byte count: an integer, or a number with a K, M or G suffix (powers of 1024,
/// optionally followed by `B` or `iB`, any case). The result must be a whole number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let bad = || format!("\"{text}\" is not a byte count like 4096, 8K, 1.5M or 64M");
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let number = lower.trim_end_matches("ib").trim_end_matches('b');
    let (digits, scale) = match number.chars().last() {
        Some('k') => (&number[..number.len() - 1], 1u64 << 10),
        Some('m') => (&number[..number.len() - 1], 1 << 20),
        Some('g') => (&number[..number.len() - 1], 1 << 30),
        _ => (number, 1),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    if let Ok(n) = digits.parse::<u64>() {
        return n.checked_mul(scale).ok_or_else(bad);
    }
    let value = digits.parse::<f64>().map_err(|_| bad())? * scale as f64;
    // u64::MAX as f64 is 2^64, one past the largest u64.
    if value.fract() != 0.0 || value >= u64::MAX as f64 {
        return Err(format!("\"{text}\" is not a whole number of bytes"));
    }
    Ok(value as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn suffixes_are_binary() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("8K"), Ok(8192));
        assert_eq!(parse_bytes("8k"), Ok(8192));
        assert_eq!(parse_bytes("1.5M"), Ok(1_572_864));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2GB"), Ok(2 << 30));
    }

    #[test]
    fn rejects_nonsense_and_fractions() {
        for bad in ["", "K", "eight", "8X", "-1", "1.5.2K", "1e3"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(parse_bytes("0.3K").unwrap_err().contains("whole number"));
        // 2^64 bytes written as a fraction used to saturate to u64::MAX.
        assert!(parse_bytes("17179869184.0G").is_err());
        assert_eq!(parse_bytes("17179869183.0G"), Ok(17179869183 << 30));
    }
}
