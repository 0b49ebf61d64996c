//! One error type per area, each a one-line message that names the file, line or field, the
//! value, and what was expected. The Python bindings mirror these as an exception tree.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration, preset name, override or config file is wrong.
    #[error("{0}")]
    Config(String),
    /// A job description is wrong, or does not fit the device.
    #[error("{0}")]
    Job(String),
    /// A trace file cannot be read: a malformed line, an unknown format, an unreadable file.
    #[error("{0}")]
    Trace(String),
    /// The caller asked the run to stop (e.g. Ctrl-C through the progress callback).
    #[error("interrupted")]
    Interrupted,
    /// The simulation reached a state it cannot continue from (a bug or an unsupported corner).
    #[error("simulation error: {0}")]
    Sim(String),
    /// A job error of one flow of a run of several: which flow (its index in the run, its
    /// name) as data, so that a caller can point at the job without reading the message (the
    /// CLI points at a fio file's section); the message names the flow.
    /// (Boxed: `Error` stays the size of its string variants, which every `Result` on the
    /// event loop's path carries; unboxed, this variant cost profile_run about 1 % more
    /// instructions.)
    #[error("{}", flow_message(&.0.name, &.0.source))]
    Flow(Box<FlowError>),
}

/// The payload of [`Error::Flow`]: the flow's index in the run, its name, and its error.
#[derive(Debug)]
pub struct FlowError {
    pub index: usize,
    pub name: String,
    pub source: Error,
}

fn flow_message(name: &str, source: &Error) -> String {
    let m = source.to_string();
    match m.strip_prefix("job, ") {
        Some(rest) => format!("flow `{name}`, {rest}"),
        None => format!("flow `{name}`: {m}"),
    }
}

impl Error {
    /// This error as flow `index` (`name`)'s in a run of several flows: a job error is wrapped
    /// in [`Error::Flow`]; other kinds (and an error already naming its flow) stay as they are.
    pub fn in_flow(self, index: usize, name: &str) -> Error {
        match self {
            Error::Job(_) => Error::Flow(Box::new(FlowError {
                index,
                name: name.to_string(),
                source: self,
            })),
            e => e,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A JSON error's message without its " at line L column C": the JSON the core reads is made
/// by the Python side from options and files, so a position in it tells the user nothing (the
/// field's path, which callers name, does).
pub fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    plain_words(match text.strip_suffix(&position) {
        Some(message) => message,
        None => &text,
    })
}

/// A serde message in the user's words where it speaks Rust: "invalid value: integer `-1`,
/// expected u64" names a type the user never wrote (say the range), and "invalid type: integer
/// `3`, expected struct NandConfig" a struct (say a table). Other messages are kept.
pub fn plain_words(msg: &str) -> String {
    let got_expected = |prefix: &str| -> Option<(String, String)> {
        let rest = msg.strip_prefix(prefix)?;
        let (got, expected) = rest.split_once(", expected ")?;
        let got = got
            .rsplit_once(' ')
            .map_or(got, |(_, v)| v)
            .trim_matches('`');
        Some((got.to_string(), expected.to_string()))
    };
    let range = |ty: &str| -> Option<String> {
        let (lo, hi): (i128, i128) = match ty {
            "u8" => (0, u8::MAX.into()),
            "u16" => (0, u16::MAX.into()),
            "u32" => (0, u32::MAX.into()),
            "u64" | "usize" => (0, u64::MAX.into()),
            "i8" => (i8::MIN.into(), i8::MAX.into()),
            "i16" => (i16::MIN.into(), i16::MAX.into()),
            "i32" => (i32::MIN.into(), i32::MAX.into()),
            "i64" => (i64::MIN.into(), i64::MAX.into()),
            _ => return None,
        };
        Some(format!("an integer from {lo} to {hi}"))
    };
    for prefix in ["invalid value: ", "invalid type: "] {
        if let Some((got, expected)) = got_expected(prefix) {
            if let Some(range) = range(&expected) {
                return format!("got {got}, expected {range}");
            }
            if expected == "f64" || expected == "f32" {
                // A number TOML cannot hold as a float (1e400) reaches the field as a string.
                return format!("got {got}, expected a finite number");
            }
            if expected.starts_with("struct ") {
                return format!("got {got}, expected a table of fields");
            }
        }
    }
    msg.to_string()
}

#[cfg(test)]
mod tests {
    use super::plain_words;

    #[test]
    fn serde_messages_in_the_users_words() {
        let m = plain_words("invalid value: integer `-1`, expected u64");
        assert_eq!(
            m,
            "got -1, expected an integer from 0 to 18446744073709551615"
        );
        let m = plain_words("invalid type: integer `3`, expected struct NandConfig");
        assert_eq!(m, "got 3, expected a table of fields");
        let m = plain_words("invalid type: floating point `1.5`, expected u32");
        assert_eq!(m, "got 1.5, expected an integer from 0 to 4294967295");
        let m = plain_words("invalid type: string \"1e400\", expected f64");
        assert_eq!(m, "got \"1e400\", expected a finite number");
        assert_eq!(plain_words("missing field `rw`"), "missing field `rw`");
    }
}
