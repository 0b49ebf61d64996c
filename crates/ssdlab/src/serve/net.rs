//! Where the server listens and the byte streams of its connections: TCP, a Unix socket, or
//! TLS over either.

use super::tls::{Socket, TlsStream};
use crate::error::Invalid;
use crate::error::{Error, Result};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// `tcp://HOST:PORT` (the protocol's port is 10809).
    Tcp(String),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Listen {
    pub fn parse(text: &str) -> Result<Listen> {
        if let Some(addr) = text.strip_prefix("tcp://") {
            let ok = addr
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if ok {
                return Ok(Listen::Tcp(addr.to_string()));
            }
        } else if let Some(path) = text.strip_prefix("unix:") {
            if !path.is_empty() {
                return Ok(Listen::Unix(PathBuf::from(path)));
            }
        }
        Err(Error::bad_serve(Invalid::option(
            "--listen",
            format!("{text:?}"),
            "tcp://HOST:PORT (e.g. tcp://127.0.0.1:10809) or unix:PATH",
        )))
    }

    /// Whether other machines can reach the address: a TCP host that resolves to any address
    /// outside loopback (0.0.0.0 and :: are every interface). A Unix socket is this machine's.
    pub fn reaches_network(&self) -> Result<bool> {
        match self {
            Listen::Unix(_) => Ok(false),
            Listen::Tcp(addr) => {
                let addrs = addr.to_socket_addrs().map_err(|e| listen_err(self, e))?;
                Ok(addrs
                    .into_iter()
                    .any(|a| !a.ip().to_canonical().is_loopback()))
            }
        }
    }

    pub fn text(&self) -> String {
        match self {
            Listen::Tcp(a) => format!("tcp://{a}"),
            Listen::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

/// A connection's byte stream.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS over TCP or a Unix socket, after NBD_OPT_STARTTLS.
    Tls(TlsStream<Stream>),
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tls(s) => Stream::Tls(s.try_clone()?),
        })
    }

    /// A plain socket's descriptor (None for TLS, whose bytes only its session may write).
    pub fn into_fd(self) -> Option<OwnedFd> {
        match self {
            Stream::Tcp(s) => Some(s.into()),
            Stream::Unix(s) => Some(s.into()),
            Stream::Tls(_) => None,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    pub fn shutdown(&self) {
        Socket::shutdown(self)
    }

    /// Of a plain socket (TLS sets its own socket non-blocking).
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        Socket::set_nonblocking(self, on)
    }
}

impl Socket for Stream {
    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tls(s) => {
                s.shutdown();
                Ok(())
            }
        };
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tls(_) => Ok(()),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    /// One writev(2) on a socket; TLS gathers small buffers into records (`TlsStream`).
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// `--listen ADDRESS: {why}`: an address the server cannot resolve or listen on.
fn listen_err(listen: &Listen, e: std::io::Error) -> Error {
    Error::bad_serve(Invalid::option_says(
        "--listen",
        listen.text(),
        e.to_string(),
    ))
}

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    pub fn bind(listen: &Listen) -> Result<Listener> {
        let l = match listen {
            Listen::Tcp(addr) => {
                Listener::Tcp(TcpListener::bind(addr).map_err(|e| listen_err(listen, e))?)
            }
            Listen::Unix(path) => Listener::Unix(
                bind_owner_only(path).map_err(|e| listen_err(listen, e))?,
                path.clone(),
            ),
        };
        match &l {
            Listener::Tcp(t) => t.set_nonblocking(true),
            Listener::Unix(u, _) => u.set_nonblocking(true),
        }
        .map_err(|e| listen_err(listen, e))?;
        Ok(l)
    }

    /// Where a client connects, as an NBD URI (`scheme` nbd or nbds).
    pub fn address(&self, scheme: &str) -> String {
        match self {
            Listener::Tcp(t) => t
                .local_addr()
                .map(|a| format!("{scheme}://{a}"))
                .unwrap_or_default(),
            Listener::Unix(_, p) => format!("{scheme}+unix:///?socket={}", p.display()),
        }
    }

    pub fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(t) => {
                let (s, _) = t.accept()?;
                s.set_nonblocking(false)?;
                let _ = s.set_nodelay(true);
                Ok(Stream::Tcp(s))
            }
            Listener::Unix(u, _) => {
                let (s, _) = u.accept()?;
                s.set_nonblocking(false)?;
                widen_send_buffer(&s);
                Ok(Stream::Unix(s))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A Unix socket's send buffer made room for a few 1 MiB replies (the system caps it at
/// net.core.wmem_max): at the default 208 KiB a 1 MiB read's reply left in five writes, each
/// waiting for the client to read, a wake-up of the writer each. TCP sizes its own buffers.
fn widen_send_buffer(s: &UnixStream) {
    const SEND_BUFFER_BYTES: libc::c_int = 4 << 20;
    // SAFETY: setsockopt on a socket this stream owns, with a c_int value of its size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &SEND_BUFFER_BYTES as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A listening Unix socket at `path` that only its owner can connect to: the socket file is
/// made 0600 between bind() and listen(), so no one connects before it is (connecting needs
/// write permission on the file, and a socket that does not listen yet refuses everyone).
fn bind_owner_only(path: &Path) -> io::Result<UnixListener> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a socket path of {} bytes, expected fewer than {}",
                bytes.len(),
                addr.sun_path.len()
            ),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: socket() with constant arguments; the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fcntl on our own descriptor: not inherited by a child process.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    // SAFETY: addr is a valid sockaddr_un of at least `len` bytes.
    let r = unsafe {
        libc::bind(
            fd,
            &addr as *const libc::sockaddr_un as *const libc::sockaddr,
            len as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let listening = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| {
            // SAFETY: listen on our own bound socket.
            if unsafe { libc::listen(fd, 128) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    if let Err(e) = listening {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(UnixListener::from(sock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_unix_sockets_stay_on_this_machine() {
        for (text, network) in [
            ("tcp://127.0.0.1:10809", false),
            ("tcp://[::1]:10809", false),
            ("tcp://localhost:10809", false),
            ("tcp://0.0.0.0:10809", true),
            ("tcp://[::]:10809", true),
            ("tcp://192.0.2.7:10809", true),
            ("unix:/tmp/x.sock", false),
        ] {
            let l = Listen::parse(text).unwrap();
            assert_eq!(l.reaches_network().unwrap(), network, "{text}");
            assert_eq!(l.text(), text);
        }
    }

    #[test]
    fn a_unix_socket_is_created_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ssdlab-net-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let l = Listener::bind(&Listen::Unix(path.clone())).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // It listens: a client connects (its owner may).
        UnixStream::connect(&path).unwrap();
        drop(l);
        assert!(!path.exists());
        let long = dir.join("x".repeat(200));
        let e = Listener::bind(&Listen::Unix(long))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("expected fewer than 108"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
