//! The layout of the findings timeline: time across, pods down. Plain
//! numbers, so the layout is tested without a browser; `ui::explain` draws it.

use classify_wasm::FindingTrace;

/// Seconds since 1970 of an RFC 3339 time in UTC or with an offset; `None`
/// when it does not parse.
pub fn seconds(t: &str) -> Option<f64> {
    let b = t.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let y = num(t.get(0..4)?)?;
    let mo = num(t.get(5..7)?)?;
    let d = num(t.get(8..10)?)?;
    let h = num(t.get(11..13)?)?;
    let mi = num(t.get(14..16)?)?;
    let s = num(t.get(17..19)?)?;
    let mut rest = &t[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits: String = r.chars().take_while(char::is_ascii_digit).collect();
        frac = format!("0.{digits}").parse().ok()?;
        rest = &r[digits.len()..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (num(o.get(1..3)?)? * 3600 + num(o.get(4..6)?)? * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some((days * 86400 + h * 3600 + mi * 60 + s - offset) as f64 + frac)
}

/// One mark: where a finding goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub index: usize,
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    /// Pod names, top to bottom, with their row's y.
    pub pods: Vec<(String, f64)>,
    pub marks: Vec<Mark>,
    /// The x of the "undated" column, when any finding is undated.
    pub undated_x: Option<f64>,
    /// First and last dated times (seconds) and their x.
    pub span: Option<((f64, f64), (f64, f64))>,
}

pub const LABEL_WIDTH: f64 = 230.0;
pub const ROW_HEIGHT: f64 = 28.0;
pub const TOP: f64 = 24.0;

pub fn layout(findings: &[FindingTrace], width: f64) -> Layout {
    let mut pods: Vec<String> = Vec::new();
    for f in findings {
        if !pods.contains(&f.pod) {
            pods.push(f.pod.clone());
        }
    }
    let times: Vec<Option<f64>> = findings
        .iter()
        .map(|f| f.date.as_deref().and_then(seconds))
        .collect();
    let dated: Vec<f64> = times.iter().flatten().copied().collect();
    let any_undated = times.iter().any(Option::is_none);
    let right = if any_undated {
        width - 90.0
    } else {
        width - 20.0
    };
    let left = LABEL_WIDTH + 10.0;
    let (lo, hi) = dated
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        });
    let x_of = |t: f64| {
        if hi > lo {
            left + (t - lo) / (hi - lo) * (right - left)
        } else {
            (left + right) / 2.0
        }
    };
    let undated_x = any_undated.then_some(width - 45.0);
    let y_of = |pod: &str| {
        let i = pods.iter().position(|p| p == pod).unwrap_or(0);
        TOP + ROW_HEIGHT * i as f64 + ROW_HEIGHT / 2.0
    };
    let marks = findings
        .iter()
        .zip(&times)
        .enumerate()
        .map(|(index, (f, t))| Mark {
            index,
            x: t.map_or(width - 45.0, x_of),
            y: y_of(&f.pod),
        })
        .collect();
    Layout {
        width,
        height: TOP + ROW_HEIGHT * pods.len().max(1) as f64 + 24.0,
        pods: pods.iter().map(|p| (p.clone(), y_of(p))).collect(),
        marks,
        undated_x,
        span: (!dated.is_empty()).then(|| ((lo, x_of(lo)), (hi, x_of(hi)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::{CauseKind, FindingSource};
    use wasm_bindgen_test::wasm_bindgen_test;

    fn finding(pod: &str, date: Option<&str>) -> FindingTrace {
        FindingTrace {
            pod: pod.into(),
            pod_uid: String::new(),
            captured: false,
            source: FindingSource::NodeContainer,
            kind: CauseKind::OutOfMemory,
            rank: 2,
            date: date.map(str::to_string),
            detail: String::new(),
            winner: false,
        }
    }

    #[test]
    #[wasm_bindgen_test]
    fn parses_times() {
        assert_eq!(seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(seconds("2000-03-01T00:00:01.5Z"), Some(951868801.5));
        assert_eq!(seconds("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(seconds("soon"), None);
    }

    #[test]
    #[wasm_bindgen_test]
    fn lays_out_pods_and_times() {
        let f = vec![
            finding("a", Some("2026-01-01T00:00:00Z")),
            finding("b", Some("2026-01-01T00:01:00Z")),
            finding("a", None),
        ];
        let l = layout(&f, 800.0);
        assert_eq!(l.pods.len(), 2);
        assert!(l.marks[0].x < l.marks[1].x);
        assert_eq!(l.marks[0].y, l.marks[2].y);
        assert_eq!(l.undated_x, Some(755.0));
        assert_eq!(l.marks[2].x, 755.0);
    }
}
