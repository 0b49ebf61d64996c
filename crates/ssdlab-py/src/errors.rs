//! The exception classes of `ssdlab._core` and the mapping from the core's error areas to them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use ssdlab::Error;

create_exception!(
    _core,
    SsdlabError,
    PyException,
    "Base of every ssdlab user error."
);
create_exception!(
    _core,
    ConfigError,
    SsdlabError,
    "A bad configuration, preset, override or config file."
);
create_exception!(
    _core,
    JobError,
    SsdlabError,
    "A bad job description, or one that does not fit the device."
);
create_exception!(
    _core,
    TraceError,
    SsdlabError,
    "A trace file that cannot be read: a malformed line, an unknown format, an unreadable file."
);
create_exception!(
    _core,
    ServeError,
    ConfigError,
    "`ssdlab serve` cannot serve as asked: an option, a file an option names, a config it cannot \
     serve (a ConfigError, as these were before serve had its own class)."
);
create_exception!(
    _core,
    PagingError,
    ConfigError,
    "A paging run cannot run as asked: its [swap] settings, its device, or the state they led it \
     to (out of memory and swap, a swap request past the kernel's timeout); a ConfigError."
);
create_exception!(
    _core,
    Interrupted,
    SsdlabError,
    "A run stopped by the user."
);
create_exception!(
    _core,
    SimulationError,
    SsdlabError,
    "The simulation reached a state it cannot continue from."
);

/// The attributes an exception of the core carries, `None` where the error has no such part:
/// `origin`, `field`, `value` and `expected` (an [`ssdlab::Invalid`]'s), and `flow` (the flow's
/// index in a run of several). Class attributes of `SsdlabError` give every instance, the
/// Python side's own included, the same names.
const PARTS: [&str; 5] = ["origin", "field", "value", "expected", "flow"];

pub(crate) fn to_py(e: Error) -> PyErr {
    let err = new_err(&e, e.to_string());
    Python::with_gil(|py| {
        let value = err.value(py);
        // Setting an attribute on a fresh exception instance cannot fail.
        if let Some(i) = e.invalid() {
            let _ = value.setattr("origin", &i.origin);
            let _ = value.setattr("field", &i.field);
            let _ = value.setattr("value", &i.value);
            let _ = value.setattr("expected", &i.expected);
        }
        // The flow's index: the CLI points at the job without reading the message.
        if let Error::Flow(flow) = &e {
            let _ = value.setattr("flow", flow.index);
        }
    });
    err
}

/// The exception of `e`'s area with the message `msg`; a flow's error is its source's class.
fn new_err(e: &Error, msg: String) -> PyErr {
    match e {
        Error::Config(_) => ConfigError::new_err(msg),
        Error::Job(_) => JobError::new_err(msg),
        Error::Trace(_) => TraceError::new_err(msg),
        Error::Interrupted => Interrupted::new_err(msg),
        Error::Device(_) => SimulationError::new_err(msg),
        Error::Serve(_) => ServeError::new_err(msg),
        Error::Paging(_) => PagingError::new_err(msg),
        Error::Flow(flow) => new_err(&flow.source, msg),
    }
}

/// Whether a long core loop run without the GIL may go on: takes the GIL to run pending signal
/// handlers (Ctrl-C raises KeyboardInterrupt there) and keeps the exception in `raised`.
pub(crate) fn no_signal(raised: &mut Option<PyErr>) -> bool {
    Python::with_gil(|py| match py.check_signals() {
        Ok(()) => true,
        Err(e) => {
            *raised = Some(e);
            false
        }
    })
}

/// The Python error for a core error, where the core stopped because a signal handler raised
/// `raised`: a KeyboardInterrupt becomes `Interrupted`, any other exception stays itself.
pub(crate) fn to_py_signalled(py: Python<'_>, e: Error, raised: Option<PyErr>) -> PyErr {
    match (e, raised) {
        (Error::Interrupted, Some(r))
            if !r.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) =>
        {
            r
        }
        (e, _) => to_py(e),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SsdlabError", py.get_type::<SsdlabError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("JobError", py.get_type::<JobError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("ServeError", py.get_type::<ServeError>())?;
    m.add("PagingError", py.get_type::<PagingError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    let base = py.get_type::<SsdlabError>();
    for part in PARTS {
        base.setattr(part, py.None())?;
    }
    Ok(())
}
