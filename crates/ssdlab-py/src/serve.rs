//! The live device for `ssdlab serve` (`ssdlab::serve`): an NBD server over a simulated drive.

use pyo3::prelude::*;
use ssdlab::serve::data::DataSpec;
use ssdlab::serve::tls::{Credentials, TlsMode};
use ssdlab::serve::{Clock, Listen, ServeOptions, Tick, DEFAULT_MAX_CONNECTIONS};
use ssdlab::SsdConfig;

use crate::errors::to_py;

/// Serve the config over NBD until interrupted (Ctrl-C, or a KeyboardInterrupt raised by
/// `tick`); returns the session's result JSON. Releases the GIL; `ready(address)` is called once
/// the server listens, `tick(figures_json)` about four times a second. `log`: write the session
/// log there (a trace `run_trace` replays), `log_data` each logged write's bytes in order. `tls`: "off", "on" or "require" (None: require with
/// credentials, else off); `tls_psk` a PSK file, `tls_certificates` a directory of X.509 files
/// (`tls_verify_peer`: clients need a certificate signed by its ca-cert.pem). `power_cuts`: arm
/// the drive's power-loss model; `tick` returning "power-cut" then cuts the power (and
/// `power_cut_event` cuts it after that many device events, logical clock only).
#[pyfunction]
#[pyo3(signature = (config_json, listen, export_name="", read_only=false, clock="realtime", time_scale=1.0, seed=1, data="memory", log=None, log_data=None, tls=None, tls_psk=None, tls_certificates=None, tls_verify_peer=true, max_connections=None, insecure_network=false, power_cuts=false, power_cut_event=None, ready=None, tick=None))]
#[allow(clippy::too_many_arguments)]
fn serve(
    py: Python<'_>,
    config_json: &str,
    listen: &str,
    export_name: &str,
    read_only: bool,
    clock: &str,
    time_scale: f64,
    seed: u64,
    data: &str,
    log: Option<std::path::PathBuf>,
    log_data: Option<std::path::PathBuf>,
    tls: Option<&str>,
    tls_psk: Option<std::path::PathBuf>,
    tls_certificates: Option<std::path::PathBuf>,
    tls_verify_peer: bool,
    max_connections: Option<usize>,
    insecure_network: bool,
    power_cuts: bool,
    power_cut_event: Option<u64>,
    ready: Option<PyObject>,
    tick: Option<PyObject>,
) -> PyResult<String> {
    let cfg = SsdConfig::from_json(config_json).map_err(to_py)?;
    let opts = ServeOptions {
        listen: Listen::parse(listen).map_err(to_py)?,
        export_name: export_name.to_string(),
        read_only,
        clock: Clock::parse(clock).map_err(to_py)?,
        time_scale,
        seed,
        data: DataSpec::parse(data).map_err(to_py)?,
        log,
        log_data,
        tls: tls.map(TlsMode::parse).transpose().map_err(to_py)?,
        tls_credentials: match (tls_psk, tls_certificates) {
            (Some(_), Some(_)) => {
                return Err(to_py(ssdlab::Error::bad_serve(ssdlab::Invalid::unnamed(
                    "--tls-psk and --tls-certificates",
                    ssdlab::error::says("expected one of them"),
                ))))
            }
            (Some(file), None) => Some(Credentials::Psk(file)),
            (None, Some(dir)) => Some(Credentials::Certificates {
                dir,
                verify_peer: tls_verify_peer,
            }),
            (None, None) => None,
        },
        max_connections: max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
        insecure_network,
        power_cuts,
        power_cut_event,
    };
    let mut callback_error: Option<PyErr> = None;
    let ready_error: std::sync::Mutex<Option<PyErr>> = Default::default();
    // Ctrl-C or SIGTERM while the banner is printed: a stop like any other (the session's result
    // is still written), not an error.
    let stop_at_once = std::sync::atomic::AtomicBool::new(false);
    let result = py.allow_threads(|| {
        ssdlab::serve::serve(
            &cfg,
            &opts,
            &mut |address, access| {
                Python::with_gil(|py| {
                    if let Some(cb) = &ready {
                        if let Err(e) = cb.call1(py, (address, access)) {
                            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                                stop_at_once.store(true, std::sync::atomic::Ordering::Relaxed);
                            } else {
                                ready_error.lock().unwrap().get_or_insert(e);
                            }
                        }
                    }
                })
            },
            &mut |figures| {
                Python::with_gil(|py| {
                    if ready_error.lock().unwrap().is_some()
                        || stop_at_once.load(std::sync::atomic::Ordering::Relaxed)
                    {
                        return Tick::Stop;
                    }
                    // Ctrl-C (or SIGTERM turned into KeyboardInterrupt) ends the session.
                    if let Err(e) = py.check_signals() {
                        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                            callback_error = Some(e);
                        }
                        return Tick::Stop;
                    }
                    if let Some(cb) = &tick {
                        match cb.call1(py, (figures,)) {
                            Err(e) => {
                                if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                                    callback_error = Some(e);
                                }
                                return Tick::Stop;
                            }
                            Ok(asked) => {
                                if asked.extract::<&str>(py).is_ok_and(|a| a == "power-cut") {
                                    return Tick::PowerCut;
                                }
                            }
                        }
                    }
                    Tick::Go
                })
            },
        )
    });
    if let Some(e) = ready_error.into_inner().unwrap().or(callback_error) {
        return Err(e);
    }
    result.map(|r| r.to_json()).map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve, m)?)
}
