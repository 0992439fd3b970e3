//! Reading a value leniently: a value of the wanted type is kept, any
//! other is skipped (a map or an array is read through, not built), so a
//! wrong type never fails the object. The leaves of the read schema
//! (`read.rs`) and the queue trees (`queue.rs`) are read through it.

use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::Integer;

/// A value read leniently: `Some` when it has the type `T` reads.
pub(super) struct Maybe<T>(pub(super) Option<T>);

/// A type read from a JSON value of one type; a value of another type
/// yields nothing and is skipped.
pub(super) trait Lenient: Sized {
    fn from_str(_: &str) -> Option<Self> {
        None
    }
    fn from_string(text: String) -> Option<Self> {
        Self::from_str(&text)
    }
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    fn from_integer(_: Integer) -> Option<Self> {
        None
    }
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de, T: Lenient> Deserialize<'de> for Maybe<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientVisitor(PhantomData))
            .map(Maybe)
    }
}

/// The `Visitor` methods both lenient visitors share (this one and the
/// read schema's, `read.rs`): bytes, null and unit read as nothing, and an
/// option or a newtype as what it holds.
macro_rules! nothing_for_absent_values {
    () => {
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}
pub(super) use nothing_for_absent_values;

struct LenientVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient> Visitor<'de> for LenientVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(T::from_bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(T::from_integer(Integer::Signed(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(T::from_integer(Integer::Unsigned(v)))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(T::from_string(v))
    }
    nothing_for_absent_values!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::from_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::from_map(map)
    }
}

impl Lenient for String {
    fn from_str(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn from_string(text: String) -> Option<Self> {
        Some(text)
    }
}

impl Lenient for bool {
    fn from_bool(v: bool) -> Option<Self> {
        Some(v)
    }
}

impl Lenient for Integer {
    fn from_integer(v: Integer) -> Option<Self> {
        Some(v)
    }
}
