//! RFC 3339 date-times as instants (section 1, Times). A time that does not
//! match reads as missing, never as an error: clusters write what they write.

use std::fmt;

/// An instant: seconds since 1970-01-01T00:00:00Z and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    seconds: i64,
    nanos: u32,
}

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        _ => 28,
    }
}

/// Days from 1970-01-01 to the given civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl Time {
    /// The instant `seconds` after 1970-01-01T00:00:00Z (a reader's clock,
    /// such as the server's history; the engine reads none).
    pub fn from_unix_seconds(seconds: i64) -> Time {
        Time { seconds, nanos: 0 }
    }

    /// `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)`, `T` and `Z` in either case.
    pub fn parse(text: &str) -> Option<Time> {
        let [y0, y1, y2, y3, dash1, mo0, mo1, dash2, d0, d1, t, h0, h1, colon1, mi0, mi1, colon2, s0, s1, rest @ ..] =
            text.as_bytes()
        else {
            return None;
        };
        // The shortest form has a one-byte zone after the seconds.
        if rest.is_empty() {
            return None;
        }
        let year = i64::from(digits(&[*y0, *y1, *y2, *y3])?);
        let month = digits(&[*mo0, *mo1])?;
        let day = digits(&[*d0, *d1])?;
        let hour = digits(&[*h0, *h1])?;
        let minute = digits(&[*mi0, *mi1])?;
        let second = digits(&[*s0, *s1])?;
        if *dash1 != b'-' || *dash2 != b'-' || !matches!(t, b'T' | b't') {
            return None;
        }
        if *colon1 != b':' || *colon2 != b':' {
            return None;
        }
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let mut rest = rest;
        let mut nanos = 0u32;
        if let Some(fraction) = rest.strip_prefix(b".") {
            let len = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
            if len == 0 {
                return None;
            }
            // Digits past the ninth are dropped.
            for i in 0..9 {
                nanos = nanos * 10
                    + fraction
                        .get(i)
                        .filter(|_| i < len)
                        .map_or(0, |d| u32::from(d - b'0'));
            }
            rest = fraction.get(len..).unwrap_or_default();
        }
        let offset = match rest {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let h = digits(&[*h1, *h2])?;
                let m = digits(&[*m1, *m2])?;
                if h > 23 || m > 59 {
                    return None;
                }
                let minutes = i64::from(h * 60 + m);
                if *sign == b'+' {
                    minutes
                } else {
                    -minutes
                }
            }
            _ => return None,
        };
        let seconds = days_from_civil(year, month, day) * 86_400
            + i64::from(hour * 3600 + minute * 60 + second)
            - offset * 60;
        Some(Time { seconds, nanos })
    }
}

/// Always in UTC with nanoseconds trimmed, for traces: `2026-11-29T10:00:00Z`.
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.seconds.div_euclid(86_400);
        let secs = self.seconds.rem_euclid(86_400);
        let (y, mo, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_from_unix_seconds_prints_as_rfc3339_utc() {
        assert_eq!(
            Time::from_unix_seconds(0).to_string(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            Time::from_unix_seconds(951_782_400 + 86_399).to_string(),
            "2000-02-29T23:59:59Z"
        );
        assert_eq!(
            Time::from_unix_seconds(-1).to_string(),
            "1969-12-31T23:59:59Z"
        );
        assert_eq!(
            Time::parse("2026-12-01T09:00:00Z"),
            Some(Time::from_unix_seconds(1_796_115_600))
        );
    }

    #[test]
    fn parses_and_compares_instants() {
        let a = Time::parse("2026-11-29T10:00:00Z").unwrap();
        let b = Time::parse("2026-11-29t11:00:00+01:00").unwrap();
        assert_eq!(a, b);
        let c = Time::parse("2026-11-29T10:00:00.000000001234Z").unwrap();
        assert!(c > a);
        assert_eq!(c.to_string(), "2026-11-29T10:00:00.000000001Z");
        assert_eq!(a.to_string(), "2026-11-29T10:00:00Z");
    }

    #[test]
    fn rejects_what_rfc3339_does_not_allow() {
        for bad in [
            "2026-02-30T10:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T10:60:00Z",
            "2026-11-29T10:00:60Z",
            "2026-11-29 10:00:00Z",
            "2026-11-29T10:00:00",
            "2026-11-29T10:00:00+24:00",
            "2026-11-29T10:00:00.Z",
            "2026-13-01T10:00:00Z",
            "",
            "2026-11-29T10:00:00Zjunk",
        ] {
            assert_eq!(Time::parse(bad), None, "{bad}");
        }
        assert!(Time::parse("2024-02-29T00:00:00Z").is_some());
        assert!(Time::parse("2023-02-29T00:00:00Z").is_none());
    }
}
