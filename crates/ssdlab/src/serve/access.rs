//! Who may talk to the live device: the check that keeps a server from reaching other machines
//! in the clear, the sentence the banner prints about who can connect, and the count of the
//! connections turned away, by reason, for the session's result.

use super::net::Listen;
use super::tls::{ClientAuth, Tls, TlsMode};
use crate::error::{Error, Invalid, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a connection was turned away before it reached transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `--max-connections` were open already.
    TooManyConnections,
    /// TLS is required and the client did not start it.
    TlsRequired,
    /// The TLS handshake failed: a wrong or unknown key, a certificate the server does not
    /// trust, or bytes that are not TLS.
    TlsHandshakeFailed,
    /// The client asked for an export name the server does not have.
    UnknownExport,
    /// The handshake took longer than [`HANDSHAKE_LIMIT_S`].
    HandshakeTimeout,
    /// The client broke the protocol (unknown flags, a wrong magic, endless options).
    ProtocolError,
}

impl Refusal {
    pub const ALL: [Refusal; 6] = [
        Refusal::TooManyConnections,
        Refusal::TlsRequired,
        Refusal::TlsHandshakeFailed,
        Refusal::UnknownExport,
        Refusal::HandshakeTimeout,
        Refusal::ProtocolError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::TooManyConnections => "too_many_connections",
            Refusal::TlsRequired => "tls_required",
            Refusal::TlsHandshakeFailed => "tls_handshake_failed",
            Refusal::UnknownExport => "unknown_export",
            Refusal::HandshakeTimeout => "handshake_timeout",
            Refusal::ProtocolError => "protocol_error",
        }
    }
}

/// Seconds a client has from connecting to choosing the export (TLS handshake included); then
/// the connection is closed, so that silent clients cannot hold the connection slots.
pub const HANDSHAKE_LIMIT_S: u64 = 10;

/// The connections of a session: how many came, how many reached transmission, how many were
/// turned away and why.
#[derive(Debug, Default)]
pub struct Door {
    connected: AtomicU64,
    served: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
}

impl Door {
    pub fn connected(&self) {
        self.connected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn served(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refuse(&self, why: Refusal) {
        let k = Refusal::ALL.iter().position(|&r| r == why).expect("listed");
        self.refused[k].fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self, why: Refusal) -> u64 {
        let k = Refusal::ALL.iter().position(|&r| r == why).expect("listed");
        self.refused[k].load(Ordering::Relaxed)
    }

    /// For the session's result: every reason, zero or not.
    pub fn json(&self) -> serde_json::Value {
        let refused: serde_json::Map<String, serde_json::Value> = Refusal::ALL
            .iter()
            .map(|&r| (r.name().to_string(), self.refused(r).into()))
            .collect();
        serde_json::json!({
            "connected": self.connected.load(Ordering::Relaxed),
            "served": self.served.load(Ordering::Relaxed),
            "refused": refused,
        })
    }
}

/// Refuse to serve other machines unless every client must authenticate over TLS, or the user
/// said `--insecure-network`. Returns whether the address reaches other machines.
pub fn check_exposure(listen: &Listen, tls: Option<&Tls>, insecure_network: bool) -> Result<bool> {
    let network = listen.reaches_network()?;
    let guarded = tls.is_some_and(|t| t.mode == TlsMode::Require && t.auth != ClientAuth::None);
    if network && !guarded && !insecure_network {
        let why = match tls {
            None => "in the clear to anyone who reaches it",
            Some(t) if t.mode != TlsMode::Require => "with TLS optional, so in the clear too",
            Some(_) => "to any client (certificates are not checked: --no-tls-verify-peer)",
        };
        return Err(Error::bad_serve(Invalid::option_says(
            "--listen",
            listen.text(),
            format!(
                "reaches other machines, and would serve the drive {why}; serve it with \
                 --tls-psk FILE (or --tls-certificates DIR) and --tls require, or say \
                 --insecure-network to serve it so anyway"
            ),
        )));
    }
    Ok(network)
}

/// The banner's sentence on who can connect.
pub fn who_can_connect(
    listen: &Listen,
    network: bool,
    tls: Option<&Tls>,
    max_connections: usize,
) -> String {
    let place = match listen {
        Listen::Unix(_) => {
            "this user's processes (and root's): the socket is mode 0600".to_string()
        }
        Listen::Tcp(_) if network => format!("any machine that reaches {}", listen.text()),
        Listen::Tcp(_) => "any process on this machine (loopback only)".to_string(),
    };
    let how = match tls {
        None => "in the clear, without authentication".to_string(),
        Some(t) => {
            let auth = match &t.auth {
                ClientAuth::Psk { file, users } => {
                    let mut names = users
                        .iter()
                        .take(5)
                        .map(|u| u.as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    if users.len() > 5 {
                        names.push_str(&format!(" and {} more", users.len() - 5));
                    }
                    format!("with the key of a user in {} ({names})", file.display())
                }
                ClientAuth::Certificate { ca } => {
                    format!("with a client certificate signed by {}", ca.display())
                }
                ClientAuth::None => "any client (client certificates are not checked)".into(),
            };
            match t.mode {
                TlsMode::Require => format!("over TLS only, {auth}"),
                _ => format!("over TLS {auth}, or in the clear without authentication"),
            }
        }
    };
    format!("who can connect: {place}, {how}; at most {max_connections} connections at once")
}

#[cfg(test)]
mod tests {
    use super::super::tls::Credentials;
    use super::*;

    #[test]
    fn the_network_is_served_only_to_clients_that_authenticate_over_tls() {
        let lo = Listen::parse("tcp://127.0.0.1:10809").unwrap();
        let any = Listen::parse("tcp://0.0.0.0:10809").unwrap();
        assert!(!check_exposure(&lo, None, false).unwrap());
        let e = check_exposure(&any, None, false).unwrap_err().to_string();
        assert!(
            e.starts_with("--listen tcp://0.0.0.0:10809: reaches other machines"),
            "{e}"
        );
        assert!(e.contains("--insecure-network"), "{e}");
        assert!(check_exposure(&any, None, true).unwrap());
        let s = who_can_connect(&any, true, None, 16);
        assert_eq!(
            s,
            "who can connect: any machine that reaches tcp://0.0.0.0:10809, in the clear, \
             without authentication; at most 16 connections at once"
        );
        let s = who_can_connect(&lo, false, None, 4);
        assert!(s.contains("loopback only"), "{s}");
        // With a PSK file: served to the network only when TLS is required.
        let dir = std::env::temp_dir().join(format!("ssdlab-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keys = dir.join("keys.psk");
        std::fs::write(&keys, "alice:00112233445566778899aabbccddeeff\n").unwrap();
        let psk = Credentials::Psk(keys.clone());
        let require = Tls::new(TlsMode::Require, Some(&psk)).unwrap().unwrap();
        assert!(check_exposure(&any, Some(&require), false).unwrap());
        let s = who_can_connect(&any, true, Some(&require), 16);
        assert_eq!(
            s,
            format!(
                "who can connect: any machine that reaches tcp://0.0.0.0:10809, over TLS only, \
                 with the key of a user in {} (alice); at most 16 connections at once",
                keys.display()
            )
        );
        let on = Tls::new(TlsMode::On, Some(&psk)).unwrap().unwrap();
        let e = check_exposure(&any, Some(&on), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("with TLS optional"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refusals_are_counted_by_reason() {
        let d = Door::default();
        d.connected();
        d.connected();
        d.served();
        d.refuse(Refusal::TlsRequired);
        let j = d.json();
        assert_eq!(j["connected"], 2);
        assert_eq!(j["served"], 1);
        assert_eq!(j["refused"]["tls_required"], 1);
        assert_eq!(j["refused"]["too_many_connections"], 0);
        assert_eq!(j["refused"].as_object().unwrap().len(), Refusal::ALL.len());
    }
}
