//! TLS for the live device, as the NBD protocol negotiates it (`NBD_OPT_STARTTLS`): the server's
//! credentials — X.509 certificates or pre-shared keys — and a TLS connection that a reader and
//! a writer thread share.
//!
//! The library is OpenSSL (the `openssl` crate, over the system's libssl). It is chosen because
//! the NBD clients people use (libnbd's nbdinfo and nbdcopy, QEMU) speak TLS through GnuTLS with
//! either X.509 certificates or an external pre-shared key named by a user, and a server must
//! accept both: OpenSSL serves external PSKs (TLS 1.3, and TLS 1.2's PSK cipher suites) through
//! `SSL_CTX_set_psk_server_callback` as well as certificates. rustls has no external PSK.
//!
//! No key is ever written anywhere: error messages name the file, line and user, never a key.

use crate::error::{got, says, Invalid, Problem};
use crate::error::{Error, Result};
use openssl::ssl::{
    ErrorCode, SslAcceptor, SslMethod, SslOptions, SslSessionCacheMode, SslStream, SslVerifyMode,
};
use openssl::x509::X509Name;
use std::collections::HashMap;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Whether the server offers TLS, and whether it insists on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// No TLS: `NBD_OPT_STARTTLS` is unsupported.
    Off,
    /// TLS for a client that asks; plaintext clients are served too.
    On,
    /// Every option but `NBD_OPT_STARTTLS` (and `NBD_OPT_ABORT`) is refused until TLS is up.
    Require,
}

impl TlsMode {
    pub fn parse(text: &str) -> Result<TlsMode> {
        match text {
            "off" => Ok(TlsMode::Off),
            "on" => Ok(TlsMode::On),
            "require" => Ok(TlsMode::Require),
            _ => Err(Error::bad_serve(Invalid::option(
                "--tls",
                format!("{text:?}"),
                "off, on or require",
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Off => "off",
            TlsMode::On => "on",
            TlsMode::Require => "require",
        }
    }
}

/// Where the server's TLS credentials come from (nbdkit's options and file names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credentials {
    /// `--tls-psk FILE`: lines `USER:HEXKEY`, as GnuTLS's psktool writes them.
    Psk(PathBuf),
    /// `--tls-certificates DIR`: `server-cert.pem` and `server-key.pem`, and `ca-cert.pem`, the
    /// authority a client's certificate must be signed by when `verify_peer`.
    Certificates { dir: PathBuf, verify_peer: bool },
}

/// The longest PSK file read: many thousands of users.
pub const MAX_PSK_FILE_BYTES: u64 = 1 << 20;
/// The longest user name and key taken from a PSK file (OpenSSL's own limits are larger).
pub const MAX_PSK_USER_BYTES: usize = 128;
pub const MAX_PSK_KEY_BYTES: usize = 256;

/// The users of a PSK file and their keys. Its `Debug` names the users only.
pub struct PskUsers {
    keys: HashMap<Vec<u8>, Vec<u8>>,
    /// The users in the file's order (the first names the example client URI).
    pub names: Vec<String>,
}

impl std::fmt::Debug for PskUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PskUsers")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl PskUsers {
    /// The users of a PSK file's text; errors name the line (never its key).
    pub fn parse(text: &str, path: &Path) -> Result<PskUsers> {
        // `--tls-psk FILE, line L[, field `user`]: ...`, as a trace's line is named.
        let origin = |line: usize| format!("--tls-psk {}, line {line}", path.display());
        let at = |line: usize, problem: Problem| {
            Error::bad_serve(Invalid::unnamed(origin(line), problem))
        };
        let of = |line: usize, field: &str, problem: Problem| {
            Error::bad_serve(Invalid::new(origin(line), field, problem))
        };
        let mut users = PskUsers {
            keys: HashMap::new(),
            names: Vec::new(),
        };
        for (k, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let Some((user, hex)) = line.split_once(':') else {
                return Err(at(k + 1, says("expected USER:HEXKEY (as psktool writes)")));
            };
            if user.is_empty() || user.len() > MAX_PSK_USER_BYTES {
                return Err(of(
                    k + 1,
                    "user",
                    got(
                        format!("a name of {} bytes", user.len()),
                        format!("1 to {MAX_PSK_USER_BYTES} bytes"),
                    ),
                ));
            }
            let Some(key) = decode_hex(hex) else {
                return Err(of(
                    k + 1,
                    "key",
                    says(format!(
                        "the key of user {user:?} is not an even number of hex digits"
                    )),
                ));
            };
            if key.is_empty() || key.len() > MAX_PSK_KEY_BYTES {
                return Err(of(
                    k + 1,
                    "key",
                    got(
                        format!("{} bytes for user {user:?}", key.len()),
                        format!("1 to {MAX_PSK_KEY_BYTES} bytes"),
                    ),
                ));
            }
            if users.keys.insert(user.as_bytes().to_vec(), key).is_some() {
                return Err(of(
                    k + 1,
                    "user",
                    says(format!("user {user:?} appears a second time")),
                ));
            }
            users.names.push(user.to_string());
        }
        if users.names.is_empty() {
            return Err(Error::bad_serve(Invalid::option_says(
                "--tls-psk",
                path.display(),
                format!(
                    "no USER:HEXKEY line (make one with: psktool -u USER -p {})",
                    path.display()
                ),
            )));
        }
        Ok(users)
    }

    pub fn read(path: &Path) -> Result<PskUsers> {
        let says = |what: String| {
            Error::bad_serve(Invalid::option_says("--tls-psk", path.display(), what))
        };
        let err = |e: io::Error| says(e.to_string());
        let file = std::fs::File::open(path).map_err(err)?;
        let mut bytes = Vec::new();
        file.take(MAX_PSK_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(err)?;
        if bytes.len() as u64 > MAX_PSK_FILE_BYTES {
            return Err(says(format!(
                "larger than {MAX_PSK_FILE_BYTES} bytes, expected a file of USER:HEXKEY lines"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| says("not UTF-8 text, expected USER:HEXKEY lines".into()))?;
        PskUsers::parse(&text, path)
    }

    fn key(&self, user: &[u8]) -> Option<&[u8]> {
        self.keys.get(user).map(|k| k.as_slice())
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let pairs = hex.as_bytes().chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    pairs
        .map(|p| Some((digit(p[0])? * 16 + digit(p[1])?) as u8))
        .collect()
}

/// How clients authenticate themselves, for the banner and the session result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// A user's key from the PSK file (its users, in order).
    Psk { file: PathBuf, users: Vec<String> },
    /// A certificate signed by the authority in `ca`.
    Certificate { ca: PathBuf },
    /// None: the server's certificate proves the server, any client may connect.
    None,
}

impl ClientAuth {
    /// How clients prove themselves, as the session's result names it.
    pub fn name(&self) -> &'static str {
        match self {
            ClientAuth::Psk { .. } => "psk",
            ClientAuth::Certificate { .. } => "certificate",
            ClientAuth::None => "none",
        }
    }
}

/// The server's TLS: its mode and its credentials, ready to accept connections.
pub struct Tls {
    pub mode: TlsMode,
    pub auth: ClientAuth,
    acceptor: SslAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// OpenSSL's errors as one line (they name what failed, never a key).
fn ssl_message(e: &openssl::error::ErrorStack) -> String {
    let text = e
        .errors()
        .iter()
        .map(|x| x.reason().unwrap_or("unknown error").to_string())
        .collect::<Vec<_>>()
        .join("; ");
    if text.is_empty() {
        "unknown OpenSSL error".into()
    } else {
        text
    }
}

impl Tls {
    /// The TLS of `mode` with `credentials`; None when TLS is off. A mode that is on needs
    /// credentials, and credentials need a mode that is on.
    pub fn new(mode: TlsMode, credentials: Option<&Credentials>) -> Result<Option<Tls>> {
        let credentials = match (mode, credentials) {
            (TlsMode::Off, None) => return Ok(None),
            (TlsMode::Off, Some(_)) => {
                return Err(Error::bad_serve(Invalid::option(
                    "--tls",
                    "off with --tls-psk or --tls-certificates",
                    "--tls on or require, or no credentials",
                )))
            }
            (_, None) => {
                return Err(Error::bad_serve(Invalid::option(
                    "--tls",
                    mode.name(),
                    "credentials too, --tls-psk FILE or --tls-certificates DIR",
                )))
            }
            (_, Some(c)) => c,
        };
        // OpenSSL refusing its own setup: no option to blame, its words.
        let ssl_err = |what: &str, e: openssl::error::ErrorStack| {
            Error::bad_serve(Invalid::unnamed(what, says(ssl_message(&e))))
        };
        let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())
            .map_err(|e| ssl_err("TLS", e))?;
        // Every connection authenticates in full: no session resumption, no renegotiation.
        b.set_session_cache_mode(SslSessionCacheMode::OFF);
        b.set_num_tickets(0).map_err(|e| ssl_err("TLS", e))?;
        b.set_options(SslOptions::NO_RENEGOTIATION);
        let auth = match credentials {
            Credentials::Psk(path) => {
                let users = PskUsers::read(path)?;
                let names = users.names.clone();
                // TLS 1.2's PSK suites, for a client without TLS 1.3 (TLS 1.3 takes the same
                // callback with its own suites).
                b.set_cipher_list(
                    "ECDHE-PSK-CHACHA20-POLY1305:DHE-PSK-AES256-GCM-SHA384:\
                     DHE-PSK-AES128-GCM-SHA256:DHE-PSK-CHACHA20-POLY1305",
                )
                .map_err(|e| ssl_err("TLS", e))?;
                b.set_psk_server_callback(move |_ssl, identity, out| {
                    // An unknown user or a key longer than OpenSSL's buffer: no key, the
                    // handshake fails.
                    match identity.and_then(|user| users.key(user)) {
                        Some(key) if key.len() <= out.len() => {
                            out[..key.len()].copy_from_slice(key);
                            Ok(key.len())
                        }
                        _ => Ok(0),
                    }
                });
                ClientAuth::Psk {
                    file: path.clone(),
                    users: names,
                }
            }
            Credentials::Certificates { dir, verify_peer } => {
                let file = |name: &str| -> Result<PathBuf> {
                    let p = dir.join(name);
                    if !p.is_file() {
                        return Err(Error::bad_serve(Invalid::option_says(
                            "--tls-certificates",
                            dir.display(),
                            format!(
                                "no {name} in it (expected ca-cert.pem, server-cert.pem and \
                                 server-key.pem, as nbdkit names them)"
                            ),
                        )));
                    }
                    Ok(p)
                };
                let cert = file("server-cert.pem")?;
                let key = file("server-key.pem")?;
                let cert_err = |what: &Path, e| {
                    Error::bad_serve(Invalid::option_says(
                        "--tls-certificates",
                        what.display(),
                        ssl_message(&e),
                    ))
                };
                b.set_certificate_chain_file(&cert)
                    .map_err(|e| cert_err(&cert, e))?;
                b.set_private_key_file(&key, openssl::ssl::SslFiletype::PEM)
                    .map_err(|e| cert_err(&key, e))?;
                b.check_private_key().map_err(|e| cert_err(&key, e))?;
                if *verify_peer {
                    let ca = file("ca-cert.pem")?;
                    b.set_ca_file(&ca).map_err(|e| cert_err(&ca, e))?;
                    b.set_client_ca_list(
                        X509Name::load_client_ca_file(&ca).map_err(|e| cert_err(&ca, e))?,
                    );
                    b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
                    ClientAuth::Certificate { ca }
                } else {
                    ClientAuth::None
                }
            }
        };
        Ok(Some(Tls {
            mode,
            auth,
            acceptor: b.build(),
        }))
    }

    /// The TLS handshake on a connection whose client was just sent STARTTLS's acknowledgement.
    /// The stream is blocking (a client that stalls is cut off by the handshake's time limit).
    pub fn accept<S: Socket>(&self, stream: S) -> io::Result<TlsStream<S>> {
        let fd = stream.as_raw_fd();
        let tls = self
            .acceptor
            .accept(stream)
            .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
        tls.get_ref().set_nonblocking(true)?;
        Ok(TlsStream {
            ssl: Arc::new(Mutex::new(tls)),
            fd,
            gather: Vec::new(),
        })
    }
}

/// The socket under a TLS connection (the serve module's plain stream): TLS needs it
/// non-blocking, and shut down when the connection ends.
pub trait Socket: Read + Write + AsRawFd {
    fn set_nonblocking(&self, on: bool) -> io::Result<()>;
    fn shutdown(&self);
}

/// A TLS connection shared by a reader and a writer thread. The socket is non-blocking: each
/// side takes the lock only for one OpenSSL call, and waits for the socket (poll) without it,
/// so a reader waiting for a request never holds up a reply.
pub struct TlsStream<S> {
    ssl: Arc<Mutex<SslStream<S>>>,
    fd: RawFd,
    /// Where a vectored write gathers small buffers, kept for the next (a fresh 256 KiB
    /// buffer is a fresh mapping, 64 page faults); each half of a stream has its own.
    gather: Vec<u8>,
}

impl<S: Socket> TlsStream<S> {
    pub fn try_clone(&self) -> io::Result<TlsStream<S>> {
        Ok(TlsStream {
            ssl: self.ssl.clone(),
            fd: self.fd,
            gather: Vec::new(),
        })
    }

    /// Say goodbye (TLS close_notify, if the socket takes it now), then shut the socket down:
    /// both threads' waits end.
    pub fn shutdown(&self) {
        let mut ssl = self.ssl.lock().unwrap_or_else(|p| p.into_inner());
        let _ = ssl.shutdown();
        ssl.get_ref().shutdown();
    }

    /// What to do after an OpenSSL call did not complete: wait for the socket and try again
    /// (Ok(true)), the peer closed TLS (Ok(false)), or a failure.
    fn retry(&self, e: openssl::ssl::Error) -> io::Result<bool> {
        let events = match e.code() {
            ErrorCode::WANT_READ => libc::POLLIN,
            ErrorCode::WANT_WRITE => libc::POLLOUT,
            ErrorCode::ZERO_RETURN => return Ok(false),
            _ => {
                return Err(e
                    .into_io_error()
                    .unwrap_or_else(|e| io::Error::other(e.to_string())))
            }
        };
        let mut p = libc::pollfd {
            fd: self.fd,
            events,
            revents: 0,
        };
        loop {
            // SAFETY: one pollfd, owned by this frame; the descriptor stays open while the
            // SslStream (held through self.ssl) owns the socket.
            let r = unsafe { libc::poll(&mut p, 1, -1) };
            if r >= 0 {
                return Ok(true);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

impl<S> AsRawFd for TlsStream<S> {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl<S: Socket> Read for TlsStream<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let r = self.ssl.lock().unwrap().ssl_read(buf);
            match r {
                Ok(n) => return Ok(n),
                Err(e) => {
                    if !self.retry(e)? {
                        return Ok(0);
                    }
                }
            }
        }
    }
}

impl<S: Socket> Write for TlsStream<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            let r = self.ssl.lock().unwrap().ssl_write(buf);
            match r {
                Ok(n) => return Ok(n),
                Err(e) => {
                    if !self.retry(e)? {
                        return Err(io::ErrorKind::BrokenPipe.into());
                    }
                }
            }
        }
    }

    /// TLS seals what it is given into records: buffers smaller than 256 KiB are gathered
    /// first, so that a batch of small replies is not a record and a system call each.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        const GATHER_BYTES: usize = 256 << 10;
        let Some(first) = bufs.iter().find(|b| !b.is_empty()) else {
            return Ok(0);
        };
        if first.len() >= GATHER_BYTES {
            return self.write(first);
        }
        let mut gathered = std::mem::take(&mut self.gather);
        gathered.clear();
        for b in bufs {
            let room = GATHER_BYTES - gathered.len();
            gathered.extend_from_slice(&b[..b.len().min(room)]);
            if gathered.len() == GATHER_BYTES {
                break;
            }
        }
        let written = self.write(&gathered);
        self.gather = gathered;
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        // Each ssl_write has written its records to the socket.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::net::Stream;
    use super::*;

    #[test]
    fn a_psk_file_reads_as_psktool_writes_it_and_errors_never_show_a_key() {
        let path = Path::new("keys.psk");
        let u = PskUsers::parse("alice:00ff10\r\n\nbob:DEADbeef\n", path).unwrap();
        assert_eq!(u.names, ["alice", "bob"]);
        assert_eq!(u.key(b"alice"), Some(&[0, 0xff, 0x10][..]));
        assert_eq!(u.key(b"bob"), Some(&[0xde, 0xad, 0xbe, 0xef][..]));
        assert_eq!(u.key(b"carol"), None);
        assert!(!format!("{u:?}").contains("00ff10"));
        let secret = "c0ffee0123456789";
        for (text, expect) in [
            (format!("alice{secret}\n"), ", line 1: expected USER:HEXKEY"),
            (
                format!("alice:{secret}0\n"),
                ", line 1, field `key`: the key of user \"alice\" is not",
            ),
            (
                format!("\nalice:{secret}x1\n"),
                ", line 2, field `key`: the key of user \"alice\" is not",
            ),
            (
                format!(":{secret}\n"),
                ", line 1, field `user`: got a name of 0 bytes, expected 1 to",
            ),
            (
                "alice:\n".to_string(),
                "field `key`: got 0 bytes for user \"alice\", expected 1 to 256 bytes",
            ),
            (
                format!("a:{secret}\na:{secret}\n"),
                ", line 2, field `user`: user \"a\" appears a second time",
            ),
            ("\n\n".to_string(), "no USER:HEXKEY line"),
        ] {
            let e = PskUsers::parse(&text, path).unwrap_err().to_string();
            assert!(e.contains(expect), "{e}");
            assert!(e.starts_with("--tls-psk keys.psk"), "{e}");
            assert!(!e.contains(secret) && !e.contains("c0ffee"), "{e}");
        }
        let long = format!("alice:{}\n", "ab".repeat(MAX_PSK_KEY_BYTES + 1));
        let e = PskUsers::parse(&long, path).unwrap_err();
        assert!(matches!(e, Error::Serve(_)), "{e:?}");
        let i = e.invalid().expect("the parts as data");
        assert_eq!(
            (i.origin.as_str(), i.field.as_deref(), i.expected.as_deref()),
            (
                "--tls-psk keys.psk, line 1",
                Some("key"),
                Some("1 to 256 bytes")
            )
        );
        assert!(e.to_string().contains("got 257 bytes"), "{e}");
    }

    #[test]
    fn tls_modes_and_credentials_must_agree() {
        assert_eq!(TlsMode::parse("require").unwrap(), TlsMode::Require);
        assert!(TlsMode::parse("yes")
            .unwrap_err()
            .to_string()
            .contains("expected off, on or require"));
        assert!(Tls::new(TlsMode::Off, None).unwrap().is_none());
        let psk = Credentials::Psk("keys.psk".into());
        let e = Tls::new(TlsMode::Off, Some(&psk)).unwrap_err().to_string();
        assert!(e.contains("--tls off with --tls-psk"), "{e}");
        let e = Tls::new(TlsMode::Require, None).unwrap_err().to_string();
        assert!(e.contains("--tls require: expected credentials"), "{e}");
        let dir = std::env::temp_dir().join(format!("ssdlab-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let certs = Credentials::Certificates {
            dir: dir.clone(),
            verify_peer: true,
        };
        let e = Tls::new(TlsMode::On, Some(&certs)).unwrap_err().to_string();
        assert!(e.contains("no server-cert.pem in it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A server with a PSK file that gives user alice `0011…ff`, and a socket pair: the
    /// client's end and the server's. `tag` keeps the file apart from another test's.
    fn psk_pair(tag: &str) -> (Tls, std::os::unix::net::UnixStream, Stream, PathBuf) {
        let dir = std::env::temp_dir().join(format!("ssdlab-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keys = dir.join("keys.psk");
        std::fs::write(&keys, "alice:00112233445566778899aabbccddeeff\n").unwrap();
        let tls = Tls::new(TlsMode::Require, Some(&Credentials::Psk(keys)))
            .unwrap()
            .unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        (tls, b, Stream::Unix(a), dir)
    }

    /// A client that names user alice with `key`.
    fn connector(key: Vec<u8>) -> openssl::ssl::SslConnector {
        let mut c = openssl::ssl::SslConnector::builder(SslMethod::tls_client()).unwrap();
        c.set_verify(SslVerifyMode::NONE);
        c.set_psk_client_callback(move |_, _, identity, psk| {
            identity[..6].copy_from_slice(b"alice\0");
            psk[..key.len()].copy_from_slice(&key);
            Ok(key.len())
        });
        c.build()
    }

    #[test]
    fn a_tls_stream_reads_while_its_writer_waits_and_a_wrong_key_is_refused() {
        let good: Vec<u8> = (0..16u8).map(|k| k * 0x11).collect();
        let (tls, client, server, dir) = psk_pair("duplex");
        // 8 MiB each way at once: the server's writer fills the socket and waits while its
        // reader must still take the client's bytes (a writer that held the connection while
        // it waited would stall both sides).
        let sent: Vec<u8> = (0..8u32 << 20).map(|k| (k * 7 % 251) as u8).collect();
        let expect = sent.clone();
        let served = std::thread::spawn(move || {
            let stream = tls.accept(server).unwrap();
            let mut reader = stream.try_clone().unwrap();
            let mut writer = stream;
            let out = expect.clone();
            let w = std::thread::spawn(move || {
                writer.write_all(&out).unwrap();
                writer
            });
            let mut got = Vec::new();
            reader.read_to_end(&mut got).unwrap();
            w.join().unwrap().shutdown();
            got
        });
        let mut c = connector(good)
            .configure()
            .unwrap()
            .verify_hostname(false)
            .connect("ssdlab", client)
            .unwrap();
        c.write_all(&sent).unwrap();
        let mut back = vec![0u8; sent.len()];
        c.read_exact(&mut back).unwrap();
        c.shutdown().unwrap();
        assert!(back == sent);
        assert!(served.join().unwrap() == sent);
        std::fs::remove_dir_all(&dir).unwrap();
        // The same user with another key: the handshake fails on both sides.
        let (tls, client, server, dir) = psk_pair("wrong");
        let served = std::thread::spawn(move || tls.accept(server).is_err());
        let c = connector(vec![9; 16])
            .configure()
            .unwrap()
            .verify_hostname(false)
            .connect("ssdlab", client);
        assert!(c.is_err());
        assert!(served.join().unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
