//! The core's errors, one type per area (config, job, trace, device, serve, paging), each a
//! one-line message that names the file, line or field, the value, and what was expected.
//! Where a message has that shape its parts are data ([`Invalid`]): the Python bindings set
//! them as the exception's `origin`, `field`, `value` and `expected` attributes, and the
//! exception's class comes from the area, so that no caller reads the message to learn what
//! went wrong.
//!
//! Serve's area holds what `ssdlab serve` refuses of its options and the files they name (a
//! bad `--listen`, a `--tls-psk` file, a config it cannot serve); paging's the `[swap]`
//! settings and what they lead a paging run to (memory and swap too small, a time too long
//! for the kernel). A session log replayed as a trace, and a paging run's memory trace, are
//! traces: their errors are the trace area's. Serve's protocol errors
//! (`serve::proto::HeaderError`) never leave the server.
//!
//! A state a run reached, with no input to point at (the device area's, and the job area's
//! where the caller's calls led there: the power is off, the clock reached its end), is an
//! [`Invalid`] too: its `origin` is the part that reached it (`hfsl`, `paging`, `cache buffer`,
//! `CSTS.RDY`, `run`) and the rule is in words ([`Invalid::unnamed`] with [`says`]), with a
//! value and an expectation where there is one (`CSTS.RDY: got 0 after 1000 polls, expected
//! 1`). The areas' `Message` (a string alone) is left to three errors whose words come from
//! elsewhere: the TOML writer's (config), HFSL's refusal of a write into another
//! application's range, whose words are also the result's `hfsl.refusals` entries (job), and
//! an I/O error restoring serve's memory store after a power cut, which cannot happen.
//! Layers below this module (the engine, `sim`) return their own small types
//! (`sim::mem::TooLarge`), which the caller names as a config's field.

use std::fmt;

/// A value that breaks a rule, with its parts as data. It reads
/// `{origin}, field `{field}`: got {value}, expected {expected}`, or, where the rule is said in
/// words rather than as one value against one expectation (two fields that disagree, a figure
/// a run reached), `{origin}, field `{field}`: {words}`; without a field the `, field ...` part
/// is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// What the bad input belongs to, as the message opens it: `job`, `trace job`, `swap`, a
    /// preset or file name (`small-tlc`), `trace.csv, line 12`, a flag (`NVMe LBA size`).
    pub origin: String,
    /// The field, as the user writes it (`nand.page_size`, `rw`).
    pub field: Option<String>,
    /// The command-line option that set the field, where the message names both
    /// (`trace job, field `devices` (--devices): ...`).
    pub flag: Option<String>,
    /// The value given, as the message shows it.
    pub value: Option<String>,
    /// What was expected instead.
    pub expected: Option<String>,
    /// The rule in words, where the message is not "got {value}, expected {expected}".
    pub words: Option<String>,
    /// What the message says after the problem, for a reader who has to find the input: a
    /// trace line's format and the line itself (`(msr trace: ...); the line: "..."`).
    pub note: Option<String>,
    /// How the message is laid out.
    pub layout: Layout,
}

/// How an [`Invalid`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `{origin}, field `{field}`: got {value}, expected {expected}` (or `{origin}: ...`
    /// without a field).
    Field,
    /// `{origin} {value}: expected {expected}`: a command-line option or an override, its value
    /// written after it as the user typed them (`--listen "x": expected tcp://HOST:PORT ...`);
    /// `{origin} {value}: {words}` where the rule is said in words (a file the option names
    /// that cannot be opened: `--log /x/y: No such file or directory`).
    Option,
}

/// What is wrong with a field: a value against what was expected, a value missing, or the
/// rule in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// `got {value}, expected {expected}`.
    Got { value: String, expected: String },
    /// `missing, expected {expected}`: the field is not there (its [`Invalid`] has no value).
    Missing { expected: String },
    /// The rule in words (two fields that disagree, a figure the run reached, a reader's own
    /// message): no one value against one expectation to name as data.
    Says(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Got { value, expected } => write!(f, "got {value}, expected {expected}"),
            Problem::Missing { expected } => write!(f, "missing, expected {expected}"),
            Problem::Says(words) => f.write_str(words),
        }
    }
}

/// `got {value}, expected {expected}`.
pub fn got(value: impl fmt::Display, expected: impl Into<String>) -> Problem {
    Problem::Got {
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// `missing, expected {expected}`.
pub fn missing(expected: impl Into<String>) -> Problem {
    Problem::Missing {
        expected: expected.into(),
    }
}

/// A rule said in words.
pub fn says(words: impl Into<String>) -> Problem {
    Problem::Says(words.into())
}

impl Invalid {
    /// `{origin}, field `{field}`: {problem}`.
    pub fn new(origin: impl Into<String>, field: impl Into<String>, problem: Problem) -> Invalid {
        Invalid::of(origin, Some(field.into()), problem)
    }

    /// `{origin}: {problem}`: a value that is not one of a table's fields (a command-line
    /// option, the document itself).
    pub fn unnamed(origin: impl Into<String>, problem: Problem) -> Invalid {
        Invalid::of(origin, None, problem)
    }

    /// `{option} {value}: {words}`: a command-line option and its value, the rule in words (a
    /// file it names that cannot be read, and why).
    pub fn option_says(
        option: impl Into<String>,
        value: impl fmt::Display,
        words: impl Into<String>,
    ) -> Invalid {
        let mut i = Invalid::option(option, value, "");
        (i.expected, i.words) = (None, Some(words.into()));
        i
    }

    /// `{origin}[, field `{field}`]: {problem}`.
    pub fn of(origin: impl Into<String>, field: Option<String>, problem: Problem) -> Invalid {
        let (value, expected, words) = match problem {
            Problem::Got { value, expected } => (Some(value), Some(expected), None),
            Problem::Missing { expected } => (None, Some(expected), None),
            Problem::Says(w) => (None, None, Some(w)),
        };
        Invalid {
            origin: origin.into(),
            field,
            flag: None,
            value,
            expected,
            words,
            note: None,
            layout: Layout::Field,
        }
    }

    /// `{option} {value}: expected {expected}`: a command-line option or override and its
    /// value.
    pub fn option(
        option: impl Into<String>,
        value: impl fmt::Display,
        expected: impl Into<String>,
    ) -> Invalid {
        Invalid {
            layout: Layout::Option,
            ..Invalid::of(option, None, got(value, expected))
        }
    }

    /// `{origin}, field `{field}`: got {value}, expected {expected}`.
    pub fn got(
        origin: impl Into<String>,
        field: impl Into<String>,
        value: impl fmt::Display,
        expected: impl Into<String>,
    ) -> Invalid {
        Invalid::new(origin, field, got(value, expected))
    }

    /// The value as data where the message says the rule in words (and names the value there):
    /// a status a command got, the back end an option does not cover.
    pub fn valued(mut self, value: impl fmt::Display) -> Invalid {
        self.value = Some(value.to_string());
        self
    }

    /// `{origin}, field `{field}`: {words}`: a field's rule said in words.
    pub fn says(
        origin: impl Into<String>,
        field: impl Into<String>,
        words: impl Into<String>,
    ) -> Invalid {
        Invalid::new(origin, field, says(words))
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_from(&self.origin, f)
    }
}

impl Invalid {
    /// The message with another opening (a flow's name in place of `job`).
    fn fmt_from(&self, origin: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(origin)?;
        match (self.layout, &self.value, &self.expected, &self.words) {
            (Layout::Option, Some(value), _, Some(words)) => {
                return write!(f, " {value}: {words}");
            }
            (Layout::Option, Some(value), Some(expected), None) => {
                return write!(f, " {value}: expected {expected}");
            }
            _ => {}
        }
        match (&self.field, origin.is_empty()) {
            (Some(field), false) => write!(f, ", field `{field}`")?,
            // A field with nothing before it (a driver's own check of a job's field).
            (Some(field), true) => write!(f, "field `{field}`")?,
            (None, _) => {}
        }
        if let Some(flag) = &self.flag {
            write!(f, " ({flag})")?;
        }
        match (&self.words, &self.value, &self.expected) {
            (Some(words), _, _) => write!(f, ": {words}")?,
            (None, Some(value), Some(expected)) => write!(f, ": got {value}, expected {expected}")?,
            (None, None, Some(expected)) => write!(f, ": missing, expected {expected}")?,
            (None, Some(value), None) => write!(f, ": got {value}")?,
            (None, None, None) => {}
        }
        match &self.note {
            Some(note) => write!(f, " {note}"),
            None => Ok(()),
        }
    }
}

/// Defines an area's error type: a boxed [`Invalid`] (boxed so that the area's error, and the
/// crate's [`Error`] around it, stay the size of a `String`: every `Result` on the event loop's
/// path carries it) and a message for what has no field, value and expectation to name, plus
/// the area's own shapes.
macro_rules! area {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident $body:tt => $fmt:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, thiserror::Error)]
        pub enum $name {
            /// A value that breaks a rule, its parts as data.
            #[error("{0}")]
            Invalid(Box<Invalid>),
            /// A message with no origin, field, value or expectation to name as data: words
            /// made elsewhere (a library's, a result's entry); each site says why.
            #[error("{0}")]
            Message(String),
            $($(#[$vdoc])* #[error($fmt)] $variant $body,)*
        }

        impl $name {
            /// The error's parts as data, where it has them.
            pub fn invalid(&self) -> Option<&Invalid> {
                match self {
                    $name::Invalid(i) => Some(i),
                    _ => None,
                }
            }
        }

        impl From<Invalid> for $name {
            fn from(i: Invalid) -> $name {
                $name::Invalid(Box::new(i))
            }
        }
    };
}

area! {
    /// A configuration, preset name, override, config file or command-line option is wrong.
    ConfigError {
        /// A config named by neither a preset nor a file (boxed: see [`Invalid`]).
        NoSuchConfig(Box<NoSuchConfig>) => "{0}",
    }
}

area! {
    /// A job description is wrong, or does not fit the device.
    JobError {}
}

area! {
    /// A trace file cannot be read: a malformed line, an unknown format, an unreadable file.
    TraceError {}
}

area! {
    /// `ssdlab serve` cannot serve as asked: an option, a file an option names (`--log`,
    /// `--tls-psk`, `--tls-certificates`, `--data`), an address it cannot listen on, a config
    /// it cannot serve.
    ServeError {}
}

area! {
    /// A paging run (`ssdlab swap`) cannot run as asked: its `[swap]` settings, its device, or
    /// a state its memory, swap and device led it to (out of memory and swap, the kernel's
    /// block-layer timeout passed).
    PagingError {}
}

area! {
    /// The simulation reached a state it cannot continue from (a bug or an unsupported
    /// corner): said in words, as there is no input to point at.
    DeviceError {}
}

/// A config named by neither a preset nor a file: the name, and the presets there are.
#[derive(Debug, thiserror::Error)]
#[error("{spec:?} is neither a preset nor an existing file; presets: {presets}")]
pub struct NoSuchConfig {
    pub spec: String,
    pub presets: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration, preset name, override or config file is wrong.
    #[error("{0}")]
    Config(ConfigError),
    /// A job description is wrong, or does not fit the device.
    #[error("{0}")]
    Job(JobError),
    /// A trace file cannot be read: a malformed line, an unknown format, an unreadable file.
    #[error("{0}")]
    Trace(TraceError),
    /// The caller asked the run to stop (e.g. Ctrl-C through the progress callback).
    #[error("interrupted")]
    Interrupted,
    /// The simulation reached a state it cannot continue from (a bug or an unsupported corner).
    #[error("simulation error: {0}")]
    Device(DeviceError),
    /// `ssdlab serve` cannot serve as asked: an option, a file it names, a config it cannot
    /// serve.
    #[error("{0}")]
    Serve(ServeError),
    /// A paging run cannot run as asked: its settings, or the state they led it to.
    #[error("{0}")]
    Paging(PagingError),
    /// A job error of one flow of a run of several: which flow (its index in the run, its
    /// name) as data, so that a caller can point at the job without reading the message (the
    /// CLI points at a fio file's section); the message names the flow.
    /// (Boxed: `Error` stays the size of its string variants, which every `Result` on the
    /// event loop's path carries; unboxed, this variant cost profile_run about 1 % more
    /// instructions.)
    #[error("{}", FlowMessage(.0))]
    Flow(Box<FlowError>),
}

/// The payload of [`Error::Flow`]: the flow's index in the run, its name, and its error.
#[derive(Debug)]
pub struct FlowError {
    pub index: usize,
    pub name: String,
    pub source: Error,
}

/// A flow's error as its message reads: a field of the job is the flow's (`flow `f`, field
/// `rw`: ...`), any other error follows the flow's name (`flow `f`: ...`).
struct FlowMessage<'a>(&'a FlowError);

impl fmt::Display for FlowMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = format!("flow `{}`", self.0.name);
        match self.0.source.invalid() {
            Some(i) if i.origin == JOB => i.fmt_from(&flow, f),
            _ => write!(f, "{flow}: {}", self.0.source),
        }
    }
}

/// The origin of a job's own fields (`job, field `rw`: ...`).
pub const JOB: &str = "job";

impl Error {
    /// A config error said in words made elsewhere (see [`ConfigError::Message`]; a value
    /// that breaks a rule is [`Error::bad_config`]).
    pub fn config(msg: String) -> Error {
        Error::Config(ConfigError::Message(msg))
    }

    /// A job error said in words made elsewhere (a value that breaks a rule, or a state said
    /// in words with its origin, is [`Error::bad_job`]).
    pub fn job(msg: String) -> Error {
        Error::Job(JobError::Message(msg))
    }

    /// Serve's refusal said in words.
    pub fn serve(msg: String) -> Error {
        Error::Serve(ServeError::Message(msg))
    }

    /// A serve option or file that breaks a rule.
    pub fn bad_serve(i: Invalid) -> Error {
        Error::Serve(i.into())
    }

    /// A paging setting that breaks a rule.
    pub fn bad_paging(i: Invalid) -> Error {
        Error::Paging(i.into())
    }

    /// A state the simulation cannot continue from, the part that reached it as the origin.
    pub fn bad_device(i: Invalid) -> Error {
        Error::Device(i.into())
    }

    /// A config value that breaks a rule.
    pub fn bad_config(i: Invalid) -> Error {
        Error::Config(i.into())
    }

    /// A job value that breaks a rule.
    pub fn bad_job(i: Invalid) -> Error {
        Error::Job(i.into())
    }

    /// A trace value that breaks a rule.
    pub fn bad_trace(i: Invalid) -> Error {
        Error::Trace(i.into())
    }

    /// The parts of the error as data (the flow's source's for a flow's error), where it has
    /// them.
    pub fn invalid(&self) -> Option<&Invalid> {
        match self {
            Error::Config(e) => e.invalid(),
            Error::Job(e) => e.invalid(),
            Error::Trace(e) => e.invalid(),
            Error::Device(e) => e.invalid(),
            Error::Serve(e) => e.invalid(),
            Error::Paging(e) => e.invalid(),
            Error::Flow(f) => f.source.invalid(),
            Error::Interrupted => None,
        }
    }

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
pub fn json_message(e: &serde_json::Error) -> Problem {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    plain_words(match text.strip_suffix(&position) {
        Some(message) => message,
        None => &text,
    })
}

/// A serde message in the user's words where it speaks Rust: "invalid value: integer `-1`,
/// expected u64" names a type the user never wrote (say the range), and "invalid type: integer
/// `3`, expected struct NandConfig" a struct (say a table). Other messages are kept, in words.
/// (The reader's message is the only account of what it refused: this reads serde's text,
/// never the crate's own.)
pub fn plain_words(msg: &str) -> Problem {
    let got_expected = |prefix: &str| -> Option<(String, String)> {
        let rest = msg.strip_prefix(prefix)?;
        let (got, expected) = rest.split_once(", expected ")?;
        // serde shows what it got as `integer `-1``, `string "x"` or, from a value parser of
        // the crate (config::units), the value as the message shows it (`"4 bananas"`).
        let got = match got.find('"') {
            Some(quote) => &got[quote..],
            None => got
                .rsplit_once(' ')
                .map_or(got, |(_, v)| v)
                .trim_matches('`'),
        };
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
                return self::got(got, range);
            }
            if expected == "f64" || expected == "f32" {
                // A number TOML cannot hold as a float (1e400) reaches the field as a string.
                return self::got(got, "a finite number");
            }
            if expected.starts_with("struct ") {
                return self::got(got, "a table of fields");
            }
            if prefix == "invalid value: " {
                // A value of the right type that breaks the field's rule: the expectation is
                // the field's own (a value parser's), in the user's words.
                return self::got(got, expected);
            }
        }
    }
    says(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stays_small() {
        // Every `Result` on the event loop's path carries an `Error`: the area types box their
        // parts so that it stays the 32 bytes of one string and a tag.
        assert_eq!(std::mem::size_of::<Error>(), 32);
    }

    #[test]
    fn invalid_reads_as_one_line() {
        let e = Error::bad_job(Invalid::got(JOB, "rw", "\"x\"", "one of `read`, `write`"));
        assert_eq!(
            e.to_string(),
            "job, field `rw`: got \"x\", expected one of `read`, `write`"
        );
        let i = e.invalid().unwrap();
        assert_eq!(i.field.as_deref(), Some("rw"));
        assert_eq!(i.value.as_deref(), Some("\"x\""));
        let flow = e.in_flow(1, "f");
        assert_eq!(
            flow.to_string(),
            "flow `f`, field `rw`: got \"x\", expected one of `read`, `write`"
        );
        assert_eq!(flow.invalid().unwrap().field.as_deref(), Some("rw"));
        let e = Error::bad_config(Invalid::says("swap", "memory", "0 bytes is no memory"));
        assert_eq!(e.to_string(), "swap, field `memory`: 0 bytes is no memory");
        let e = Error::bad_config(Invalid::unnamed("NVMe LBA size", got(100, "512 or 4096")));
        assert_eq!(
            e.to_string(),
            "NVMe LBA size: got 100, expected 512 or 4096"
        );
        let e = Error::bad_config(Invalid::option("--clock", "\"x\"", "realtime or logical"));
        assert_eq!(e.to_string(), "--clock \"x\": expected realtime or logical");
        let e = Error::bad_serve(Invalid::option_says("--log", "/x/y", "No such file"));
        assert_eq!(e.to_string(), "--log /x/y: No such file");
        let i = e.invalid().unwrap();
        assert_eq!(
            (i.origin.as_str(), i.value.as_deref(), i.expected.as_deref()),
            ("--log", Some("/x/y"), None)
        );
        let e = Error::bad_trace(Invalid::says("t.csv", "lba", "not a number")).in_flow(0, "f");
        assert_eq!(e.to_string(), "t.csv, field `lba`: not a number");
        let e = Error::bad_job(Invalid::says("trace job", "fit", "no")).in_flow(0, "f");
        assert_eq!(e.to_string(), "flow `f`: trace job, field `fit`: no");
        // A state in words: the part that reached it is the origin, a value named in the
        // words can be data too; the device area's message says it is the simulation's.
        let e = Error::bad_device(Invalid::unnamed("hfsl", says("no die has a free block")));
        assert_eq!(
            e.to_string(),
            "simulation error: hfsl: no die has a free block"
        );
        assert_eq!(e.invalid().unwrap().origin, "hfsl");
        let e = Error::bad_job(
            Invalid::unnamed("Flush", says("the controller answered Internal Error"))
                .valued("Internal Error"),
        );
        assert_eq!(
            e.to_string(),
            "Flush: the controller answered Internal Error"
        );
        assert_eq!(
            e.invalid().unwrap().value.as_deref(),
            Some("Internal Error")
        );
    }

    fn plain_words_text(msg: &str) -> String {
        plain_words(msg).to_string()
    }

    #[test]
    fn serde_messages_in_the_users_words() {
        let m = plain_words_text("invalid value: integer `-1`, expected u64");
        assert_eq!(
            m,
            "got -1, expected an integer from 0 to 18446744073709551615"
        );
        let m = plain_words_text("invalid type: integer `3`, expected struct NandConfig");
        assert_eq!(m, "got 3, expected a table of fields");
        let m = plain_words_text("invalid type: floating point `1.5`, expected u32");
        assert_eq!(m, "got 1.5, expected an integer from 0 to 4294967295");
        let m = plain_words_text("invalid type: string \"1e400\", expected f64");
        assert_eq!(m, "got \"1e400\", expected a finite number");
        assert_eq!(plain_words_text("missing field `rw`"), "missing field `rw`");
        // A value parser's (config::units) problem through serde keeps its parts.
        assert_eq!(
            plain_words("invalid value: \"4 bananas\", expected a size such as 4096"),
            got("\"4 bananas\"", "a size such as 4096")
        );
        assert_eq!(
            plain_words("invalid value: string \"a, b\", expected one of x"),
            got("\"a, b\"", "one of x")
        );
    }
}
