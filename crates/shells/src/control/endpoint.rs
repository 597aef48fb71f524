//! Where controllers connect: a Unix socket only its owner may use (the
//! user who ran emu), or a TCP address when asked (on loopback unless an
//! address is given), and the thread that accepts them. The socket's file
//! goes with the endpoint, whichever way the run ends short of `kill -9`.

use crate::error::{Result, ShellError};
use crate::sys::privilege;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// Where the control socket listens (`--control`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A Unix socket at this path.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(SocketAddr),
}

impl Address {
    /// `PATH`, `tcp:PORT` (on 127.0.0.1) or `tcp:ADDRESS:PORT`.
    pub fn parse(text: &str) -> std::result::Result<Address, String> {
        let Some(tcp) = text.strip_prefix("tcp:") else {
            if text.is_empty() {
                return Err(
                    "an empty path (write a path such as /tmp/emu.sock, or tcp:PORT)".into(),
                );
            }
            return Ok(Address::Unix(PathBuf::from(text)));
        };
        if let Ok(port) = tcp.parse::<u16>() {
            return Ok(Address::Tcp(SocketAddr::from(([127, 0, 0, 1], port))));
        }
        tcp.parse::<SocketAddr>().map(Address::Tcp).map_err(|_| {
            format!("'{text}' is not tcp:PORT or tcp:ADDRESS:PORT (e.g. tcp:7070, tcp:[::1]:7070)")
        })
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Address::Unix(path) => write!(f, "{}", path.display()),
            Address::Tcp(address) => write!(f, "tcp:{address}"),
        }
    }
}

/// A bound control socket. Dropping it removes a Unix socket's file.
pub struct Endpoint {
    listener: Listener,
    address: Address,
}

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Endpoint {
    /// Binds `address`: a Unix socket as the user who ran emu, readable and
    /// writable by that user alone. A path that exists is refused, never
    /// taken over.
    pub fn bind(address: &Address) -> Result<Endpoint> {
        let listener = match address {
            Address::Unix(path) => {
                if path.symlink_metadata().is_ok() {
                    return Err(ShellError::new(format!(
                        "--control {}: the path exists (another emu's socket, or one left by an emu \
                         that was killed); remove it or choose another path",
                        path.display()
                    )));
                }
                let bound = privilege::io_as_invoker(|| {
                    let listener = UnixListener::bind(path)?;
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
                    Ok(listener)
                });
                let listener = bound.map_err(|e| {
                    let _ = std::fs::remove_file(path);
                    ShellError::os(
                        &format!("--control {}: binding the socket", path.display()),
                        e,
                    )
                })?;
                Listener::Unix(listener, path.clone())
            }
            Address::Tcp(at) => Listener::Tcp(
                TcpListener::bind(at)
                    .map_err(|e| ShellError::os(&format!("--control tcp:{at}: binding"), e))?,
            ),
        };
        match &listener {
            Listener::Unix(l, _) => l.set_nonblocking(true),
            Listener::Tcp(l) => l.set_nonblocking(true),
        }
        .map_err(|e| ShellError::os("--control: setting up the socket", e))?;
        Ok(Endpoint {
            listener,
            address: address.clone(),
        })
    }

    pub fn address(&self) -> &Address {
        &self.address
    }

    /// The next controller waiting, if one is.
    pub(crate) fn accept(&self) -> io::Result<Option<Stream>> {
        let accepted = match &self.listener {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        };
        match accepted {
            Ok(stream) => {
                stream.set_blocking()?;
                Ok(Some(stream))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// One controller's connection.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_blocking(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(false),
            Stream::Tcp(s) => s.set_nonblocking(false),
        }
    }

    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    pub(crate) fn set_write_timeout(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(Some(timeout)),
            Stream::Tcp(s) => s.set_write_timeout(Some(timeout)),
        }
    }

    pub(crate) fn set_read_timeout(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(timeout)),
            Stream::Tcp(s) => s.set_read_timeout(Some(timeout)),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_paths_unless_tcp_is_asked_for_and_tcp_is_loopback_by_default() {
        assert_eq!(
            Address::parse("/tmp/emu.sock").unwrap(),
            Address::Unix("/tmp/emu.sock".into())
        );
        assert_eq!(
            Address::parse("tcp:7070").unwrap(),
            Address::Tcp("127.0.0.1:7070".parse().unwrap())
        );
        assert_eq!(
            Address::parse("tcp:0.0.0.0:7070").unwrap(),
            Address::Tcp("0.0.0.0:7070".parse().unwrap())
        );
        assert!(Address::parse("tcp:far.away")
            .unwrap_err()
            .contains("tcp:PORT"));
        assert!(Address::parse("").is_err());
    }

    #[test]
    fn a_path_that_exists_is_refused_and_a_socket_goes_with_its_endpoint() {
        let dir = std::env::temp_dir().join(format!("emu-endpoint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        std::fs::write(&path, "not a socket").unwrap();
        let refused = Endpoint::bind(&Address::Unix(path.clone())).err().unwrap();
        assert!(refused.0.contains("the path exists"), "{}", refused.0);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
        std::fs::remove_file(&path).unwrap();
        let endpoint = Endpoint::bind(&Address::Unix(path.clone())).unwrap();
        let mode = path.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        drop(endpoint);
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
