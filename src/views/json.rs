//! A view's fields written straight as JSON, exactly as the GraphQL executor writes them: a
//! rendered page (`graphql::render`) writes each field with these, not through a tree of values.
use async_graphql::{EnumType, ScalarType};
use chrono::{DateTime, Utc};

use crate::store::state::{Desired, OnDelete, State, VolumeFilesystem, VolumeKind};

/// A field's value, written as the JSON the executor would answer; None when it cannot be.
pub trait WriteJson {
    fn write_json(&self, out: &mut Vec<u8>) -> Option<()>;
}

/// `text` as a JSON string, as serde_json writes it. Most text here (ids, names, states) needs
/// no escape, and is then copied as it is after one pass over its bytes, which costs fewer
/// instructions than serde_json's escaper looking each byte up in its table.
pub fn write_text(out: &mut Vec<u8>, text: &str) -> Option<()> {
    let plain = text.bytes().fold(true, |plain, b| plain & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if !plain {
        return serde_json::to_writer(out, text).ok();
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Some(())
}

/// `null`, the value of an absent object or optional field.
pub fn write_null(out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(b"null");
    Some(())
}

/// An enum value by its GraphQL name, without the `Value` `enum_value` allocates.
pub fn write_enum<E: EnumType>(out: &mut Vec<u8>, value: E) -> Option<()> {
    let item = E::items().iter().find(|item| item.value == value)?;
    write_text(out, item.name)
}

/// A scalar as the executor gives it: its GraphQL value, serialized.
pub fn write_scalar<S: ScalarType>(out: &mut Vec<u8>, value: &S) -> Option<()> {
    serde_json::to_writer(out, &value.to_value()).ok()
}

impl WriteJson for String {
    fn write_json(&self, out: &mut Vec<u8>) -> Option<()> {
        write_text(out, self)
    }
}

impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(&self, out: &mut Vec<u8>) -> Option<()> {
        match self {
            Some(value) => value.write_json(out),
            None => write_null(out),
        }
    }
}

macro_rules! scalars {
    ($($scalar:ty),*) => {$(
        impl WriteJson for $scalar {
            fn write_json(&self, out: &mut Vec<u8>) -> Option<()> {
                write_scalar(out, self)
            }
        }
    )*};
}

macro_rules! enums {
    ($($enum:ty),*) => {$(
        impl WriteJson for $enum {
            fn write_json(&self, out: &mut Vec<u8>) -> Option<()> {
                write_enum(out, *self)
            }
        }
    )*};
}

scalars!(bool, i32, i64, f64, DateTime<Utc>);
enums!(State, Desired, OnDelete, VolumeKind, VolumeFilesystem);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_written_as_serde_json_writes_it_escaped_or_not() {
        let texts = [
            "pvol_01m90av50exw7pxbk2nvstn6rm",
            "",
            "a \"quoted\" name",
            "back\\slash",
            "tab\tnew\nline\u{1}",
            "é ü 名前 \u{7f}",
        ];
        for text in texts {
            let mut out = Vec::new();
            write_text(&mut out, text);
            assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn values_are_written_as_the_executor_answers_them() {
        let written = |value: &dyn WriteJson| {
            let mut out = Vec::new();
            value.write_json(&mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let at = DateTime::parse_from_rfc3339("2026-12-05T12:00:00.5Z").unwrap().with_timezone(&Utc);
        assert_eq!(written(&Some(at)), serde_json::to_string(&at.to_value()).unwrap());
        assert_eq!(written(&None::<i64>), "null");
        assert_eq!(written(&Some(2.5f64)), "2.5");
        assert_eq!(written(&State::Ready), "\"READY\"");
        assert_eq!(written(&Some(VolumeFilesystem::Ext4)), "\"EXT4\"");
    }
}
