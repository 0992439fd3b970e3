use super::*;
use test_support::Rng;

fn milli(text: &str) -> i128 {
    match Quantity::parse(text) {
        Ok(q) => q.milli(),
        Err(e) => panic!("{text:?}: {e}"),
    }
}

fn error(text: &str) -> String {
    match Quantity::parse(text) {
        Ok(q) => panic!("{text:?} read as {q}"),
        Err(e) => e.to_string(),
    }
}

const GI: i128 = 1 << 30;

#[test]
fn every_form_a_cluster_writes_is_read_exactly() {
    for (text, expected) in [
        ("64", 64_000),
        ("0", 0),
        ("500m", 500),
        ("1.5", 1_500),
        ("0.5", 500),
        (".5", 500),
        ("5.", 5_000),
        ("+2", 2_000),
        ("-1", -1_000),
        ("16Gi", 16 * GI * 1000),
        ("1.5Gi", 3 * GI * 1000 / 2),
        ("1Ki", 1_024_000),
        ("2Mi", 2 * 1_048_576 * 1000),
        ("1Ti", (1i128 << 40) * 1000),
        ("1Pi", (1i128 << 50) * 1000),
        ("1Ei", (1i128 << 60) * 1000),
        ("1k", 1_000_000),
        ("1M", 1_000_000_000),
        ("1G", 1_000_000_000_000),
        ("1T", 1_000_000_000_000_000),
        ("1P", 1_000_000_000_000_000_000),
        ("1E", 1_000_000_000_000_000_000_000),
        ("1e3", 1_000_000),
        ("1E3", 1_000_000),
        ("1e+3", 1_000_000),
        ("1e-3", 1),
        ("2.5e2", 250_000),
        ("0001", 1_000),
        ("1.000", 1_000),
    ] {
        assert_eq!(milli(text), expected, "{text}");
    }
}

#[test]
fn finer_than_a_milli_unit_rounds_up_away_from_zero() {
    assert_eq!(milli("100n"), 1);
    assert_eq!(milli("1u"), 1);
    assert_eq!(milli("1000u"), 1);
    assert_eq!(milli("1001u"), 2);
    assert_eq!(milli("0.0001"), 1);
    assert_eq!(milli("0.0000"), 0);
    assert_eq!(milli("1.0005"), 1_001);
    assert_eq!(milli("-100n"), -1);
    assert_eq!(milli("1e-24"), 1);
    assert_eq!(milli("0e-24"), 0);
}

#[test]
fn a_malformed_quantity_says_where_and_what() {
    for (text, expected) in [
        ("", "column 1: a quantity cannot be empty"),
        ("Gi", "column 1: expected a digit, found 'G'"),
        ("-", "column 2: expected a digit"),
        (".", "column 2: expected a digit"),
        ("1.2.3", "column 4: a second decimal point"),
        ("--1", "column 2: expected a digit, found '-'"),
        (
            "1Gb",
            "column 2: \"Gb\" is not a unit: use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3",
        ),
        (
            "1 Gi",
            "column 2: \" Gi\" is not a unit: use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3",
        ),
        ("1e", "column 3: expected the exponent's digits"),
        ("1e+", "column 4: expected the exponent's digits"),
        ("1e3x", "column 4: unexpected 'x' after the quantity"),
        ("1e25", "column 3: an exponent beyond 24"),
        ("1e99999999999", "column 3: an exponent beyond 24"),
        ("1234567890123456789012345678901", "column 1: more than 30 digits"),
        (
            "999999999999999999999999999999Ei",
            "column 1: too large a quantity: at most 10^27 units",
        ),
        (
            "100000000000000000000e24",
            "column 1: too large a quantity: at most 10^27 units",
        ),
        ("1000e24", "column 1: too large a quantity: at most 10^27 units"),
        ("-1000000000000000000000000000", "column 1: too large a quantity: at most 10^27 units"),
    ] {
        assert_eq!(error(text), expected, "{text:?}");
    }
}

/// The largest quantities read still have a canonical text that reads
/// back (the fuzz target found 10^35 units, whose text had 36 digits).
#[test]
fn the_largest_quantities_read_back() {
    for text in [
        "999999999999999999999999999",
        "-999999999999999999999999999",
        "999999999999999999999999999999m",
        "999999999999999999999.999999999",
        "100e24",
        "800Ei",
    ] {
        let q = Quantity::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(Quantity::parse(&q.to_string()), Ok(q), "{text:?} as {q}");
    }
}

#[test]
fn arithmetic_is_checked() {
    let gpu = Quantity::parse("8").expect("8");
    assert_eq!(gpu.checked_mul(4), Some(Quantity::from_units(32)));
    assert_eq!(
        Quantity::from_units(64).checked_sub(Quantity::from_units(56)),
        Some(Quantity::from_units(8))
    );
    assert_eq!(
        Quantity::from_milli(500).checked_add(Quantity::from_milli(700)),
        Some(Quantity::from_milli(1_200))
    );
    assert_eq!(Quantity::from_milli(i128::MAX).checked_mul(2), None);
    assert_eq!(
        Quantity::from_milli(i128::MIN).checked_sub(Quantity::from_milli(1)),
        None
    );
}

/// Any quantity's canonical text reads back to it, and a random number
/// with a random unit reads as the same arithmetic done on integers.
#[test]
fn seeded_quantities_read_back_and_agree_with_integer_arithmetic() {
    let units: [(&str, i128); 12] = [
        ("", 1_000),
        ("m", 1),
        ("k", 1_000_000),
        ("M", 1_000_000_000),
        ("G", 1_000_000_000_000),
        ("Ki", 1_024_000),
        ("Mi", 1_048_576_000),
        ("Gi", 1_073_741_824_000),
        ("Ti", 1_099_511_627_776_000),
        ("e2", 100_000),
        ("e0", 1_000),
        ("E", 1_000_000_000_000_000_000_000),
    ];
    let mut rng = Rng::new(7);
    for _ in 0..20_000 {
        let whole = (rng.next_u64() >> rng.below(64)) as i128;
        let milli = if rng.chance(50) { whole } else { -whole };
        let q = Quantity::from_milli(milli);
        assert_eq!(Quantity::parse(&q.to_string()), Ok(q), "{q}");

        let n = i128::from(rng.next_u64() % 1_000_000);
        let (unit, factor) = *rng.pick(&units);
        let text = format!("{n}{unit}");
        assert_eq!(milli_of(&text), n * factor, "{text}");
        // The same number with a fraction of three digits.
        let text = format!("{}.{:03}{unit}", n / 1000, n % 1000);
        let exact = n * factor;
        assert_eq!(
            milli_of(&text),
            exact / 1000 + i128::from(exact % 1000 != 0),
            "{text}"
        );
    }
}

fn milli_of(text: &str) -> i128 {
    milli(text)
}

#[test]
fn display_is_canonical() {
    assert_eq!(Quantity::parse("1.5").expect("q").to_string(), "1500m");
    assert_eq!(Quantity::parse("2k").expect("q").to_string(), "2000");
    assert_eq!(Quantity::parse("-250m").expect("q").to_string(), "-250m");
    assert_eq!(
        "16Gi".parse::<Quantity>().map(|q| q.to_string()),
        Ok("17179869184".into())
    );
}
