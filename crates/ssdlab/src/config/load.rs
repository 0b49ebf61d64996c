//! Reading a config: TOML into the schema with one-line errors naming origin, line and field;
//! `--set` overrides.

use crate::error::{got, says, Error, Invalid, Result};

/// Where a config came from, for error messages.
fn origin_label(origin: &str) -> String {
    if origin.is_empty() {
        "config".into()
    } else {
        origin.to_string()
    }
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i).unwrap_or(offset + 1);
    (line, col)
}

/// Deserialize TOML text into `T`, with a one-line error naming origin, line, field and problem.
pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    make_err: fn(Invalid) -> Error,
) -> Result<T> {
    // After overrides the text is a rewrite, so its line numbers mean nothing to the user.
    let lines = !origin.ends_with("with overrides");
    from_toml_text(text, origin, lines, make_err)
}

/// [`from_toml`] for a table built in memory (the `[swap]` knobs with their overrides): the same
/// rewording, no line numbers (the text is the table written out, not the user's).
pub(crate) fn from_toml_table<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    origin: &str,
    make_err: fn(Invalid) -> Error,
) -> Result<T> {
    let text = toml::to_string(table)
        .map_err(|e| make_err(Invalid::unnamed(origin_label(origin), says(e.to_string()))))?;
    from_toml_text(&text, origin, false, make_err)
}

fn from_toml_text<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    lines: bool,
    make_err: fn(Invalid) -> Error,
) -> Result<T> {
    let de = toml::de::Deserializer::new(text);
    serde_path_to_error::deserialize::<_, T>(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let raw = inner.message().replace('\n', " ");
        let mut problem = match integer_beyond_toml(&raw) {
            // An override's whole number TOML cannot hold stays a string (`apply_overrides`),
            // and an integer field then said "invalid type: string, expected u64" of a u64.
            Some((number, lo, hi)) => got(
                number,
                format!(
                    "an integer from {lo} to {hi} (a config's integers are TOML's, at most \
                     2^63 - 1)"
                ),
            ),
            None => crate::error::plain_words(&raw),
        };
        if raw == "wanted string or table" {
            // The TOML reader's words for a name given as a number or a list: say what it got
            // and which names the field takes.
            let value = inner
                .span()
                .and_then(|s| text.get(s))
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .unwrap_or("a value that is not a name");
            let names = inner
                .span()
                .and_then(|s| names_at::<T>(text, s, &path))
                .unwrap_or_else(|| "a name (a string, e.g. \"greedy\") or a table".into());
            problem = got(value, names);
        }
        let at = inner
            .span()
            .filter(|_| lines)
            .map(|s| {
                let (l, c) = line_col(text, s.start);
                format!(", line {l}, column {c}")
            })
            .unwrap_or_default();
        make_err(Invalid::of(
            format!("{}{at}", origin_label(origin)),
            field_of(&path),
            problem,
        ))
    })
}

/// A name no variant of any config or job enum has: put in a bad value's place, it makes the
/// reader's "unknown variant" error list the names the field takes ([`expected_names`]).
pub(crate) const NO_SUCH_NAME: &str = "\u{1}";

/// From the error of a read with [`NO_SUCH_NAME`] in a field's place, the names the field takes
/// in serde's words ("one of `a`, `b`"); None for any other error.
pub(crate) fn expected_names(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix(&format!("unknown variant `{NO_SUCH_NAME}`, expected "))?;
    Some(rest.replace('\n', " "))
}

/// The names an enum field at `span` takes: the text read again with [`NO_SUCH_NAME`] in the
/// value's place. None when the field is not a plain enum.
fn names_at<T: serde::de::DeserializeOwned>(
    text: &str,
    span: std::ops::Range<usize>,
    path: &str,
) -> Option<String> {
    let probe = format!(
        "{}{}{}",
        text.get(..span.start)?,
        toml::Value::String(NO_SUCH_NAME.into()),
        text.get(span.end..)?
    );
    let e = serde_path_to_error::deserialize::<_, T>(toml::de::Deserializer::new(&probe)).err()?;
    if e.path().to_string() != path {
        return None;
    }
    expected_names(e.into_inner().message())
}

/// The field a serde path names, or None for the document itself.
pub(crate) fn field_of(path: &str) -> Option<String> {
    (!path.is_empty() && path != ".").then(|| path.to_string())
}

/// Apply `dotted.path=value` overrides to a TOML document. The value is read as a TOML literal
/// (`3`, `0.1`, `true`, `"x"`, `["1us", "2us"]`) and, failing that, taken as a string.
pub fn apply_overrides(doc: &mut toml::Table, overrides: &[String]) -> Result<()> {
    for ov in overrides {
        let (path, raw) = ov.split_once('=').ok_or_else(|| {
            Error::bad_config(Invalid::option(
                "override",
                format!("{ov:?}"),
                "the form dotted.path=value, e.g. ftl.gc.policy=greedy",
            ))
        })?;
        let path = path.trim();
        let raw = raw.trim();
        if path.is_empty() {
            let origin = format!("override {ov:?}");
            return Err(Error::bad_config(Invalid::unnamed(
                origin,
                says("the path is empty"),
            )));
        }
        let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        let mut table = &mut *doc;
        let keys: Vec<&str> = path.split('.').collect();
        for (i, key) in keys.iter().enumerate() {
            if i + 1 == keys.len() {
                table.insert(key.to_string(), value.clone());
            } else {
                let entry = table
                    .entry(key.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                table = entry.as_table_mut().ok_or_else(|| {
                    let table = keys[..=i].join(".");
                    Error::bad_config(Invalid::unnamed(
                        format!("override {ov:?}"),
                        says(format!("`{table}` is a value, not a table")),
                    ))
                })?;
            }
        }
    }
    Ok(())
}

/// From the reader's "invalid type: string \"N\", expected u64" (or another integer type),
/// the whole number N when TOML cannot hold it as an integer, with the range the field takes
/// (its type's, within TOML's).
fn integer_beyond_toml(msg: &str) -> Option<(&str, i64, i64)> {
    let rest = msg.strip_prefix("invalid type: string \"")?;
    let (number, expected) = rest.split_once("\", expected ")?;
    let (lo, hi) = match expected {
        "u8" => (0, u8::MAX as i64),
        "u16" => (0, u16::MAX as i64),
        "u32" => (0, u32::MAX as i64),
        "u64" | "usize" => (0, i64::MAX),
        "i8" => (i8::MIN as i64, i8::MAX as i64),
        "i16" => (i16::MIN as i64, i16::MAX as i64),
        "i32" => (i32::MIN as i64, i32::MAX as i64),
        "i64" => (i64::MIN, i64::MAX),
        _ => return None,
    };
    let digits = number.strip_prefix(['+', '-']).unwrap_or(number);
    let is_integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    (is_integer && number.parse::<i64>().is_err()).then_some((number, lo, hi))
}

#[cfg(test)]
mod tests {
    use crate::config::SsdConfig;

    #[test]
    fn an_integer_beyond_toml_is_refused_naming_the_value_and_the_range() {
        // A u32 field: its own range, not "expected u32" of a number that is one.
        for big in [
            "18446744073709551615",
            "9223372036854775808",
            "-9223372036854775809",
        ] {
            let set = format!("nand.blocks_per_plane={big}");
            let e = SsdConfig::resolve("small-tlc", &[set])
                .unwrap_err()
                .to_string();
            let want = format!("got {big}, expected an integer from 0 to 4294967295");
            assert!(e.contains(&want), "{e}");
            assert!(e.contains("field `nand.blocks_per_plane`"), "{e}");
            assert!(!e.contains("expected u32"), "{e}");
        }
        // A u64 field (an optional one, as `--power-cut-event` sets): the most TOML holds.
        let set = "hfsl.power_cut_event=18446744073709551615".to_string();
        let e = SsdConfig::resolve("seed002-fusion", &[set])
            .unwrap_err()
            .to_string();
        let want = "got 18446744073709551615, expected an integer from 0 to 9223372036854775807";
        assert!(e.contains(want), "{e}");
    }

    #[test]
    fn a_number_where_a_name_belongs_names_the_value_and_what_is_expected() {
        let e = SsdConfig::resolve("small-tlc", &["nand.cell=5.0".to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `nand.cell`"), "{e}");
        assert!(e.contains("got 5.0, expected one of `slc`, `mlc`"), "{e}");
    }
}
