//! The PCI function address (`0000:30:03.0`): one parser and one printed form for every crate
//! that names a device, so a user's `--device 30:03.0`, a sysfs directory name and a PMU's
//! encoded root port compare equal.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A PCI function address: domain (segment), bus, device, function. Orders by domain, then
/// bus, device and function, as `lspci -D` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bdf {
    pub domain: u32,
    pub bus: u8,
    /// 0 to 31.
    pub dev: u8,
    /// 0 to 7.
    pub func: u8,
}

/// A text that is not a PCI address; its message names the text and the allowed form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BdfError {
    pub text: String,
}

impl fmt::Display for BdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}: expected a PCI address like 0000:30:03.0 ([domain:]bus:device.function in hex: a domain of 4 to 8 \
             digits, bus 00-ff, device 00-1f, function 0-7)",
            self.text
        )
    }
}

impl std::error::Error for BdfError {}

impl fmt::Display for Bdf {
    /// `dddd:bb:dd.f`, lower-case hex (a domain above `ffff` prints all its digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.dev, self.func
        )
    }
}

impl Serialize for Bdf {
    /// As its text, `0000:30:03.0`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Bdf {
    type Err = BdfError;

    /// `0000:30:03.0`, or `30:03.0` for domain 0; hex digits of either case.
    fn from_str(text: &str) -> Result<Bdf, BdfError> {
        let bad = || BdfError { text: text.to_string() };
        let (head, func) = text.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, dev) = match parts.as_slice() {
            [d, b, v] if (4..=8).contains(&d.len()) => (*d, *b, *v),
            [b, v] => ("0", *b, *v),
            _ => return Err(bad()),
        };
        let hex = |t: &str, digits: usize| {
            let ok = (digits == 0 || t.len() == digits) && t.bytes().all(|c| c.is_ascii_hexdigit());
            ok.then(|| u32::from_str_radix(t, 16).ok()).flatten().ok_or_else(bad)
        };
        let (domain, bus, dev, func) = (hex(domain, 0)?, hex(bus, 2)?, hex(dev, 2)?, hex(func, 1)?);
        if dev > 0x1f || func > 7 {
            return Err(bad());
        }
        Ok(Bdf {
            domain,
            bus: bus as u8,
            dev: dev as u8,
            func: func as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Bdf;

    #[test]
    fn addresses_parse_and_print() {
        let b: Bdf = "0001:30:03.0".parse().unwrap();
        assert_eq!((b.domain, b.bus, b.dev, b.func), (1, 0x30, 3, 0));
        assert_eq!("30:03.1".parse::<Bdf>().unwrap().to_string(), "0000:30:03.1");
        assert_eq!("03:00.0".parse::<Bdf>().unwrap().to_string(), "0000:03:00.0");
        assert_eq!("0001:AF:1f.7".parse::<Bdf>().unwrap().to_string(), "0001:af:1f.7");
        // Intel VMD puts its devices in domains above ffff.
        assert_eq!("10000:e0:00.0".parse::<Bdf>().unwrap().to_string(), "10000:e0:00.0");
        for bad in [
            "",
            "30:03",
            "0000:30:20.0",
            "0000:30:03.8",
            "0000:300:03.0",
            "x:30:03.0",
            "3:00.0",
            "0000:03:00",
            "0000:03:00.8",
            "eth0",
            "0000:03:00.0:1",
            "0:03:00.0",
            "000000000:03:00.0",
            "+0000:03:00.0",
            "0000:+3:00.0",
        ] {
            assert!(bad.parse::<Bdf>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_error_names_the_text_and_the_form() {
        let e = "eth0".parse::<Bdf>().unwrap_err().to_string();
        assert!(
            e.starts_with("\"eth0\": expected a PCI address like 0000:30:03.0 ("),
            "{e}"
        );
        assert!(e.contains("device 00-1f, function 0-7"), "{e}");
    }

    #[test]
    fn addresses_order_by_domain_then_bus() {
        let mut v: Vec<Bdf> = ["0001:00:00.0", "0000:31:00.1", "0000:31:00.0", "0000:30:03.0"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        v.sort();
        let text: Vec<String> = v.iter().map(Bdf::to_string).collect();
        assert_eq!(text, ["0000:30:03.0", "0000:31:00.0", "0000:31:00.1", "0001:00:00.0"]);
    }
}
