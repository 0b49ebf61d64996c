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
}

pub type Result<T> = std::result::Result<T, Error>;

/// A JSON error's message without its " at line L column C": the JSON the core reads is made
/// by the Python side from options and files, so a position in it tells the user nothing (the
/// field's path, which callers name, does).
pub fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&position) {
        Some(message) => message.to_string(),
        None => text,
    }
}
