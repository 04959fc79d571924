//! Writing SVG and HTML text: escaping, compact coordinates and the width a text will take.

/// A conservative estimate of rendered text width (no font metrics without dependencies).
pub(crate) fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.6
}

/// Escapes text for XML and HTML content and quoted attribute values (the inline SVGs of a
/// report page and the page itself share it); drops characters XML 1.0 forbids.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // `&#39;` rather than `&apos;`, which HTML 4 does not define.
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most two decimals and no trailing zeros (`12.5`, `-3`, `0.07`).
pub(crate) fn num(v: f64) -> String {
    debug_assert!(v.is_finite(), "non-finite coordinate");
    let hundredths = if v.is_finite() { (v * 100.0).round() as i64 } else { 0 };
    let (sign, n) = if hundredths < 0 {
        ("-", hundredths.unsigned_abs())
    } else {
        ("", hundredths.unsigned_abs())
    };
    let (int, frac) = (n / 100, n % 100);
    match frac {
        0 => format!("{sign}{int}"),
        f if f % 10 == 0 => format!("{sign}{int}.{}", f / 10),
        f => format!("{sign}{int}.{f:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, num};

    #[test]
    fn numbers_are_compact() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(-1.23456), "-1.23");
        assert_eq!(num(0.07), "0.07");
        assert_eq!(num(-0.001), "0");
    }

    #[test]
    fn escaping_keeps_markup_out() {
        assert_eq!(escape(r#"a<b>&"c"'d'"#), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
        assert_eq!(escape("x\u{1}y\nz"), "xy z");
    }
}
