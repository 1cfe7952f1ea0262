//! How sizes and times are spelled, and parsed from the command line:
//! GNU du's block sizes and human-readable rounding (always up, as du
//! does), and its time styles. The types are the plain ones of `settings`.

use crate::messages::{quote_value, report};
use crate::settings::{SizeFormat, TimeFormat};
use crate::usage::Stamp;

impl SizeFormat {
    /// Parse a `--block-size` value the way coreutils does: an optional
    /// number, then an optional unit (`K`, `M`, … in powers of 1024; `KB`,
    /// `MB`, … in powers of 1000; `KiB`, … in 1024). Without a number the
    /// unit is printed after each size. `human-readable` and `si` are the
    /// same as `-h` and `--si`.
    pub fn parse(spec: &str) -> Result<SizeFormat, BadSize> {
        match spec {
            "human-readable" => return Ok(SizeFormat::Human { base: 1024 }),
            "si" => return Ok(SizeFormat::Human { base: 1000 }),
            _ => {}
        }
        let spec = spec.strip_prefix('\'').unwrap_or(spec);
        if spec.is_empty() {
            return Err(BadSize::Invalid);
        }
        let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
        let (number, unit) = spec.split_at(digits);
        let count: u64 = if number.is_empty() {
            1
        } else {
            number.parse().map_err(|_| BadSize::TooLarge)?
        };
        let (scale, suffix) = parse_unit(unit).map_err(|why| match why {
            BadSize::Invalid if !number.is_empty() => BadSize::InvalidSuffix,
            why => why,
        })?;
        let block = count.checked_mul(scale).ok_or(BadSize::TooLarge)?;
        if block == 0 {
            return Err(BadSize::Invalid);
        }
        let suffix = if number.is_empty() { suffix } else { String::new() };
        Ok(SizeFormat::Blocks { block, suffix })
    }

    /// Append the amount as du prints it.
    pub fn write(&self, amount: u64, out: &mut Vec<u8>) {
        match self {
            SizeFormat::Blocks { block, suffix } => {
                let n = amount / block + u64::from(!amount.is_multiple_of(*block));
                write_u64(n, out);
                out.extend_from_slice(suffix.as_bytes());
            }
            SizeFormat::Human { base } => write_human(amount, *base, out),
        }
    }

    /// The amount as a string (for the tree view).
    pub fn to_string(&self, amount: u64) -> String {
        let mut v = Vec::new();
        self.write(amount, &mut v);
        String::from_utf8(v).unwrap_or_default()
    }
}

/// Why a size was refused (du words the two differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadSize {
    Invalid,
    /// A number followed by a unit du does not know (`1x`).
    InvalidSuffix,
    TooLarge,
}

/// `K`, `MB`, `GiB`, … → (multiplier, the suffix as du prints it).
fn parse_unit(unit: &str) -> Result<(u64, String), BadSize> {
    if unit.is_empty() {
        return Ok((1, String::new()));
    }
    let mut chars = unit.chars();
    let letter = chars.next().ok_or(BadSize::Invalid)?;
    // gnulib's xstrtol as du 9.1 calls it: a letter outside its valid
    // suffixes is no unit at all; one inside them that it has no unit for
    // (`e`, `p`, `y`, `z`), or a unit followed by more, is a bad suffix.
    if !"eEgGkKmMpPtTyYzZ".contains(letter) {
        return Err(BadSize::Invalid);
    }
    let power = match letter {
        'k' | 'K' => 1,
        'm' | 'M' => 2,
        'g' | 'G' => 3,
        't' | 'T' => 4,
        'P' => 5,
        'E' => 6,
        'Z' => 7,
        'Y' => 8,
        _ => return Err(BadSize::InvalidSuffix),
    };
    let (base, tail) = match chars.as_str() {
        "" => (1024u64, ""),
        "B" => (1000, "B"),
        "iB" => (1024, "iB"),
        _ => return Err(BadSize::InvalidSuffix),
    };
    let scale = (0..power)
        .try_fold(1u64, |acc, _| acc.checked_mul(base))
        .ok_or(BadSize::TooLarge)?;
    let shown = if base == 1000 && letter.eq_ignore_ascii_case(&'k') {
        'k'
    } else {
        letter.to_ascii_uppercase()
    };
    Ok((scale, format!("{shown}{tail}")))
}

pub fn write_u64(n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// gnulib's `human_readable` with `human_autoscale | human_ceiling`: the
/// same digits, the same upward rounding, the same `k` for SI kilo.
fn write_human(n: u64, base: u64, out: &mut Vec<u8>) {
    const SUFFIXES: &[u8] = b"KMGTPEZYRQ";
    let mut amt = n;
    let mut tenths = 0u64;
    let mut rounding = 0u64; // 0: exact, 1: below half, 2: half, 3: above half
    let mut exponent = 0usize;
    let mut decimal: Option<u64> = None;
    if base <= amt {
        loop {
            let r10 = (amt % base) * 10 + tenths;
            let r2 = (r10 % base) * 2 + (rounding >> 1);
            amt /= base;
            tenths = r10 / base;
            rounding = if r2 < base {
                u64::from(r2 != 0) + u64::from(rounding != 0)
            } else {
                2 + u64::from(base < r2 + rounding)
            };
            exponent += 1;
            if !(base <= amt && exponent < SUFFIXES.len()) {
                break;
            }
        }
        if amt < 10 {
            if rounding > 0 {
                tenths += 1;
                rounding = 0;
                if tenths == 10 {
                    amt += 1;
                    tenths = 0;
                }
            }
            if amt < 10 {
                decimal = Some(tenths);
                tenths = 0;
                rounding = 0;
            }
        }
    }
    if tenths + rounding > 0 {
        amt += 1;
        if amt == base && exponent < SUFFIXES.len() {
            exponent += 1;
            decimal = Some(0);
            amt = 1;
        }
    }
    write_u64(amt, out);
    if let Some(d) = decimal {
        out.push(b'.');
        out.push(b'0' + d as u8);
    }
    if exponent > 0 {
        let s = SUFFIXES[exponent - 1];
        out.push(if base == 1000 && s == b'K' { b'k' } else { s });
    }
}

impl TimeFormat {
    /// `full-iso`, `long-iso`, `iso` or `+FORMAT`; du's default is `long-iso`.
    pub fn parse(style: &str) -> Result<TimeFormat, BadSize> {
        let strftime = match style {
            "full-iso" => "%Y-%m-%d %H:%M:%S.%N %z".to_string(),
            "long-iso" => "%Y-%m-%d %H:%M".to_string(),
            "iso" => "%Y-%m-%d".to_string(),
            s if s.starts_with('+') => s[1..].split('\n').next().unwrap_or("").to_string(),
            _ => return Err(BadSize::Invalid),
        };
        Ok(TimeFormat { strftime })
    }

    /// Append a time in the local zone. Past the calendar's years (±9999),
    /// as du: the seconds, and a warning that the time is out of range.
    pub fn write(&self, stamp: Stamp, tz: &jiff::tz::TimeZone, out: &mut Vec<u8>) {
        match jiff::Timestamp::new(stamp.secs, stamp.nsec as i32) {
            Ok(ts) => out.extend_from_slice(ts.to_zoned(tz.clone()).strftime(&self.strftime).to_string().as_bytes()),
            Err(_) => {
                let secs = stamp.secs.to_string();
                report(&format!("time {} is out of range", quote_value(&secs)));
                out.extend_from_slice(secs.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_past_2262_and_past_the_calendar() {
        let format = TimeFormat::parse("long-iso").unwrap();
        let written = |secs, nsec| {
            let mut out = Vec::new();
            format.write(Stamp { secs, nsec }, &jiff::tz::TimeZone::UTC, &mut out);
            String::from_utf8(out).unwrap()
        };
        // Past what nanoseconds in an i64 hold, within XFS's range.
        assert_eq!(written(10_413_792_000, 999_999_999), "2300-01-01 00:00");
        assert_eq!(written(-10_000_000_000, 0), "1653-02-10 06:13");
        assert_eq!(written(i64::MAX, 0), i64::MAX.to_string());
        assert_eq!(written(i64::MIN, 0), i64::MIN.to_string());
    }

    fn human(n: u64, base: u64) -> String {
        let mut v = Vec::new();
        write_human(n, base, &mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn human_rounds_up_like_du() {
        assert_eq!(human(0, 1024), "0");
        assert_eq!(human(1023, 1024), "1023");
        assert_eq!(human(1024, 1024), "1.0K");
        assert_eq!(human(1500, 1024), "1.5K");
        assert_eq!(human(4096, 1000), "4.1k");
        assert_eq!(human(2_000_000, 1024), "2.0M");
        assert_eq!(human(10 * 1024 + 1, 1024), "11K");
        assert_eq!(human(1024 * 1024 - 1, 1024), "1.0M");
    }

    #[test]
    fn block_sizes_parse_like_coreutils() {
        assert_eq!(
            SizeFormat::parse("M"),
            Ok(SizeFormat::Blocks {
                block: 1 << 20,
                suffix: "M".into()
            })
        );
        assert_eq!(
            SizeFormat::parse("1M"),
            Ok(SizeFormat::Blocks {
                block: 1 << 20,
                suffix: "".into()
            })
        );
        assert_eq!(
            SizeFormat::parse("KB"),
            Ok(SizeFormat::Blocks {
                block: 1000,
                suffix: "kB".into()
            })
        );
        assert_eq!(
            SizeFormat::parse("KiB"),
            Ok(SizeFormat::Blocks {
                block: 1024,
                suffix: "KiB".into()
            })
        );
        assert_eq!(SizeFormat::parse("0"), Err(BadSize::Invalid));
        assert_eq!(SizeFormat::parse("99999999999999999999999"), Err(BadSize::TooLarge));
        assert_eq!(SizeFormat::parse(""), Err(BadSize::Invalid));
        assert_eq!(SizeFormat::parse("x"), Err(BadSize::Invalid));
        assert_eq!(SizeFormat::parse("1x"), Err(BadSize::InvalidSuffix));
        // As du 9.1: no R or Q, no lowercase e, p, y, z, nothing after a unit.
        for bad in ["e", "1e", "p", "y", "z", "KX", "KiBx", "1KX"] {
            assert_eq!(SizeFormat::parse(bad), Err(BadSize::InvalidSuffix), "{bad}");
        }
        for bad in ["R", "Q", "iB"] {
            assert_eq!(SizeFormat::parse(bad), Err(BadSize::Invalid), "{bad}");
        }
        assert_eq!(SizeFormat::parse("1R"), Err(BadSize::InvalidSuffix));
        assert!(SizeFormat::parse("foo").is_err());
    }
}
