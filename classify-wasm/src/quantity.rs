//! Kubernetes resource quantities (`64`, `500m`, `16Gi`, `1.5`, `1e3`),
//! read exactly: integers and milli-units, never floats, so quota
//! arithmetic (what a job asks for against what a ClusterQueue has free)
//! gives the same answer natively and in wasm.
//!
//! The grammar is apimachinery's `resource.Quantity`:
//!
//! ```text
//! quantity  ::= sign? number suffix
//! number    ::= digits | digits "." digits? | "." digits
//! suffix    ::= binarySI | decimalSI | ("e" | "E") sign? digits
//! binarySI  ::= "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"
//! decimalSI ::= "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E"
//! ```
//!
//! A value finer than a milli-unit is rounded up, away from zero, to the
//! next one, as Kubernetes' `MilliValue` does: `100n` of a CPU is `1m`.

use std::fmt;
use std::str::FromStr;

/// Digits a number may have, before and after its point together: more
/// than any quantity a cluster stores, and few enough that every step
/// below fits an `i128`.
const MAX_DIGITS: usize = 30;
/// The largest decimal exponent taken (`1e18` is an exabyte).
const MAX_EXPONENT: u32 = 24;
/// Quantities are below this many milli-units in magnitude (`10^27`
/// units): far past any quota, and small enough that the canonical text
/// of every quantity read has at most [`MAX_DIGITS`] digits, so it reads
/// back.
const MILLI_LIMIT: i128 = 10i128.pow(MAX_DIGITS as u32);

/// An exact resource quantity, in milli-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    milli: i128,
}

/// Why a text is not a quantity, and where: `column` counts characters of
/// the text from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for QuantityError {}

impl Quantity {
    pub const ZERO: Quantity = Quantity { milli: 0 };

    /// The quantity of `milli` milli-units.
    pub const fn from_milli(milli: i128) -> Quantity {
        Quantity { milli }
    }

    /// The quantity of `units` whole units.
    pub const fn from_units(units: i64) -> Quantity {
        Quantity {
            milli: units as i128 * 1000,
        }
    }

    /// The quantity in milli-units.
    pub const fn milli(self) -> i128 {
        self.milli
    }

    /// Reads `text` exactly (see the module docs).
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        Reader::new(text).quantity()
    }

    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        self.milli
            .checked_add(other.milli)
            .map(Quantity::from_milli)
    }

    pub fn checked_sub(self, other: Quantity) -> Option<Quantity> {
        self.milli
            .checked_sub(other.milli)
            .map(Quantity::from_milli)
    }

    /// `count` times this quantity (a pod set's `count` × a pod's request).
    pub fn checked_mul(self, count: u64) -> Option<Quantity> {
        self.milli
            .checked_mul(i128::from(count))
            .map(Quantity::from_milli)
    }
}

/// The canonical text: whole units when there is no fraction, else
/// milli-units (`1500m`). It reads back to the same quantity.
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.milli % 1000 == 0 {
            write!(f, "{}", self.milli / 1000)
        } else {
            write!(f, "{}m", self.milli)
        }
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Quantity, QuantityError> {
        Quantity::parse(text)
    }
}

/// A quantity's scale: the value is `mantissa × 10^ten × 2^two`.
#[derive(Debug, Clone, Copy)]
struct Scale {
    ten: i32,
    two: u32,
}

struct Reader<'t> {
    chars: Vec<char>,
    at: usize,
    text: &'t str,
}

impl<'t> Reader<'t> {
    fn new(text: &'t str) -> Reader<'t> {
        Reader {
            chars: text.chars().collect(),
            at: 0,
            text,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn error(&self, at: usize, message: impl Into<String>) -> QuantityError {
        QuantityError {
            column: at + 1,
            message: message.into(),
        }
    }

    fn quantity(mut self) -> Result<Quantity, QuantityError> {
        if self.text.is_empty() {
            return Err(self.error(0, "a quantity cannot be empty"));
        }
        let negative = match self.peek() {
            Some('-') => {
                self.at += 1;
                true
            }
            Some('+') => {
                self.at += 1;
                false
            }
            _ => false,
        };
        let (mantissa, fraction_digits) = self.number()?;
        let scale = self.suffix()?;
        if let Some(c) = self.peek() {
            return Err(self.error(self.at, format!("unexpected {c:?} after the quantity")));
        }
        let milli = self.to_milli(mantissa, fraction_digits, scale)?;
        Ok(Quantity::from_milli(if negative { -milli } else { milli }))
    }

    /// The digits, as one integer, and how many of them follow the point.
    fn number(&mut self) -> Result<(i128, u32), QuantityError> {
        let start = self.at;
        let mut mantissa: i128 = 0;
        let mut digits = 0usize;
        let mut fraction_digits = 0u32;
        let mut seen_point = false;
        while let Some(c) = self.peek() {
            match c {
                '0'..='9' => {
                    digits += 1;
                    if digits > MAX_DIGITS {
                        return Err(self.error(start, format!("more than {MAX_DIGITS} digits")));
                    }
                    mantissa = mantissa * 10 + i128::from(c as u8 - b'0');
                    if seen_point {
                        fraction_digits += 1;
                    }
                }
                '.' if !seen_point => seen_point = true,
                '.' => return Err(self.error(self.at, "a second decimal point")),
                _ => break,
            }
            self.at += 1;
        }
        if digits == 0 {
            return Err(match self.peek() {
                Some(c) => self.error(self.at, format!("expected a digit, found {c:?}")),
                None => self.error(self.at, "expected a digit"),
            });
        }
        Ok((mantissa, fraction_digits))
    }

    fn suffix(&mut self) -> Result<Scale, QuantityError> {
        let start = self.at;
        let rest: String = self.chars.get(start..).unwrap_or_default().iter().collect();
        let binary = |two| Scale { ten: 0, two };
        let decimal = |ten| Scale { ten, two: 0 };
        let (scale, length) = match rest.as_str() {
            "" => (decimal(0), 0),
            "Ki" => (binary(10), 2),
            "Mi" => (binary(20), 2),
            "Gi" => (binary(30), 2),
            "Ti" => (binary(40), 2),
            "Pi" => (binary(50), 2),
            "Ei" => (binary(60), 2),
            "n" => (decimal(-9), 1),
            "u" => (decimal(-6), 1),
            "m" => (decimal(-3), 1),
            "k" => (decimal(3), 1),
            "M" => (decimal(6), 1),
            "G" => (decimal(9), 1),
            "T" => (decimal(12), 1),
            "P" => (decimal(15), 1),
            "E" => (decimal(18), 1),
            _ if rest.starts_with(['e', 'E']) => {
                self.at += 1;
                return self.exponent().map(decimal);
            }
            _ => {
                return Err(self.error(
                    start,
                    format!(
                        "{rest:?} is not a unit: use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, \
                         T, P, E or an exponent such as e3"
                    ),
                ))
            }
        };
        self.at += length;
        Ok(scale)
    }

    /// The digits after `e`, with their sign.
    fn exponent(&mut self) -> Result<i32, QuantityError> {
        let negative = match self.peek() {
            Some('-') => {
                self.at += 1;
                true
            }
            Some('+') => {
                self.at += 1;
                false
            }
            _ => false,
        };
        let start = self.at;
        let mut value: u32 = 0;
        while let Some(digit) = self.peek().and_then(|c| c.to_digit(10)) {
            value = value.saturating_mul(10).saturating_add(digit);
            self.at += 1;
        }
        if self.at == start {
            return Err(self.error(start, "expected the exponent's digits"));
        }
        if value > MAX_EXPONENT {
            return Err(self.error(start, format!("an exponent beyond {MAX_EXPONENT}")));
        }
        let value = value as i32;
        Ok(if negative { -value } else { value })
    }

    /// `mantissa × 10^(ten − fraction_digits) × 2^two`, in milli-units,
    /// rounded up.
    fn to_milli(
        &self,
        mantissa: i128,
        fraction_digits: u32,
        scale: Scale,
    ) -> Result<i128, QuantityError> {
        let too_large = || self.error(0, "too large a quantity: at most 10^27 units");
        let ten = scale.ten + 3 - fraction_digits as i32;
        let scaled = mantissa
            .checked_mul(2i128.checked_pow(scale.two).ok_or_else(too_large)?)
            .ok_or_else(too_large)?;
        let milli = if ten >= 0 {
            let factor = 10i128.checked_pow(ten as u32).ok_or_else(too_large)?;
            scaled.checked_mul(factor).ok_or_else(too_large)?
        } else {
            // Finer than a milli-unit: the quotient, plus one if anything
            // is left (a power of ten past i128 leaves a quotient of 0).
            match 10i128.checked_pow(ten.unsigned_abs()) {
                Some(divisor) => scaled / divisor + i128::from(scaled % divisor != 0),
                None => i128::from(scaled != 0),
            }
        };
        if milli >= MILLI_LIMIT {
            return Err(too_large());
        }
        Ok(milli)
    }
}

#[cfg(test)]
mod tests;
