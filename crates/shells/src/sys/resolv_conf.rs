//! The host's resolver configuration as the C library reads it
//! (`/etc/resolv.conf`), and the one the command sees instead: the same
//! search domains, options and sort list, with emu's relay in place of
//! every nameserver. Text in, text out: the files themselves are
//! `sys::dns`'s.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::time::Duration;

/// What the C library takes from the host's resolv.conf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvConf {
    /// The nameservers in order, port 53. With none given the C library
    /// asks the local machine (127.0.0.1), and so does this.
    pub nameservers: Vec<SocketAddr>,
    /// Every other line that means something (`search`, `domain`,
    /// `options`, `sortlist`), as written.
    pub kept: Vec<String>,
    /// How long the C library waits for one nameserver (`options
    /// timeout:N`, 5 s unless given, at most 30 s).
    pub timeout: Duration,
}

/// The C library's wait for a nameserver unless `options timeout:N` says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The C library's ceiling on `timeout:N`.
const MAX_TIMEOUT_SECONDS: u64 = 30;

impl ResolvConf {
    /// Reads resolv.conf's text the way the C library does: keywords at
    /// the start of a line, `#` or `;` comments, the last `search` or
    /// `domain` winning (both are kept; the C library applies the last).
    pub fn parse(text: &str) -> ResolvConf {
        let mut nameservers = Vec::new();
        let mut kept = Vec::new();
        let mut timeout = DEFAULT_TIMEOUT;
        for line in text.lines() {
            let line = line.trim_end();
            let mut words = line.split_whitespace();
            let Some(keyword) = words.next() else {
                continue;
            };
            match keyword {
                "nameserver" => {
                    if let Some(server) = words.next().and_then(nameserver) {
                        nameservers.push(server);
                    }
                }
                "search" | "domain" | "sortlist" => kept.push(line.to_string()),
                "options" => {
                    for option in words {
                        if let Some(seconds) = option
                            .strip_prefix("timeout:")
                            .and_then(|n| n.parse::<u64>().ok())
                        {
                            timeout = Duration::from_secs(seconds.clamp(1, MAX_TIMEOUT_SECONDS));
                        }
                    }
                    kept.push(line.to_string());
                }
                _ => {}
            }
        }
        if nameservers.is_empty() {
            nameservers.push(SocketAddr::from((Ipv4Addr::LOCALHOST, 53)));
        }
        ResolvConf {
            nameservers,
            kept,
            timeout,
        }
    }

    /// The command's resolv.conf: one nameserver line per address family
    /// the host's nameservers use, in the order they first appear, naming
    /// the relay's address of that family (`v4`, `v6`); then the lines
    /// kept. A query leaves the command in the family the host's resolver
    /// would have been asked in.
    pub fn for_command(&self, v4: Ipv4Addr, v6: Ipv6Addr) -> String {
        let mut text = String::from(
            "# Written by emu for the command: its lookups go to emu's relay,\n\
             # which asks the host's nameservers. Everything else is the host's.\n",
        );
        let mut named: Vec<IpAddr> = Vec::new();
        for server in &self.nameservers {
            let relay = match server {
                SocketAddr::V4(_) => IpAddr::V4(v4),
                SocketAddr::V6(_) => IpAddr::V6(v6),
            };
            if !named.contains(&relay) {
                named.push(relay);
                text += &format!("nameserver {relay}\n");
            }
        }
        for line in &self.kept {
            text += line;
            text.push('\n');
        }
        text
    }
}

/// One `nameserver` value: an address, an IPv6 one possibly with a zone
/// (`fe80::1%eth0`, whose interface is looked up now).
fn nameserver(text: &str) -> Option<SocketAddr> {
    if let Ok(address) = text.parse::<IpAddr>() {
        return Some(SocketAddr::new(address, 53));
    }
    let (address, zone) = text.split_once('%')?;
    let address: Ipv6Addr = address.parse().ok()?;
    let scope = zone.parse::<u32>().ok().or_else(|| {
        let name = std::ffi::CString::new(zone).ok()?;
        // SAFETY: a NUL-terminated name; returns 0 when there is none.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        (index != 0).then_some(index)
    })?;
    Some(SocketAddr::V6(SocketAddrV6::new(address, 53, 0, scope)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESOLVED: &str =
        "# This is /run/systemd/resolve/stub-resolv.conf managed by man:systemd-resolved(8).\n\
        nameserver 127.0.0.53\n\
        options edns0 trust-ad\n\
        search lab.example corp.example\n";

    /// A systemd-resolved host: its stub, its options and search list.
    #[test]
    fn the_stub_is_replaced_and_the_rest_kept() {
        let conf = ResolvConf::parse(RESOLVED);
        assert_eq!(conf.nameservers, vec!["127.0.0.53:53".parse().unwrap()]);
        assert_eq!(conf.timeout, DEFAULT_TIMEOUT);
        let text = conf.for_command(
            "100.64.0.1".parse().unwrap(),
            "fd65:6d75::1".parse().unwrap(),
        );
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "nameserver 100.64.0.1",
                "options edns0 trust-ad",
                "search lab.example corp.example"
            ]
        );
    }

    /// Each family the host asks in is asked in inside, once, in the
    /// host's order; an IPv6-only host gives an IPv6-only file.
    #[test]
    fn nameservers_map_to_the_relay_of_their_family() {
        let (v4, v6) = (
            "100.64.0.1".parse().unwrap(),
            "fd65:6d75::1".parse().unwrap(),
        );
        let conf = ResolvConf::parse("nameserver ::1\nnameserver 10.0.0.1\nnameserver 10.0.0.2\n");
        assert_eq!(conf.nameservers.len(), 3);
        let text = conf.for_command(v4, v6);
        let servers: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("nameserver"))
            .collect();
        assert_eq!(
            servers,
            ["nameserver fd65:6d75::1", "nameserver 100.64.0.1"]
        );
        let only6 = ResolvConf::parse("nameserver ::1\n").for_command(v4, v6);
        assert!(!only6.contains("100.64.0.1"), "{only6}");
    }

    /// No nameserver line: the C library asks 127.0.0.1, and so does emu.
    /// Comments, unknown keywords and bad addresses are skipped; a zone by
    /// number is kept; the timeout option is read and bounded.
    #[test]
    fn defaults_comments_and_options() {
        let conf = ResolvConf::parse("; nothing\n# nameserver 1.1.1.1\nlookup file bind\n");
        assert_eq!(conf.nameservers, vec!["127.0.0.1:53".parse().unwrap()]);
        assert!(conf.kept.is_empty());
        let conf = ResolvConf::parse(
            "nameserver not-an-address\nnameserver fe80::1%7\noptions timeout:2 attempts:3\n",
        );
        assert_eq!(
            conf.nameservers,
            vec![SocketAddr::V6(SocketAddrV6::new(
                "fe80::1".parse().unwrap(),
                53,
                0,
                7
            ))]
        );
        assert_eq!(conf.timeout, Duration::from_secs(2));
        assert_eq!(conf.kept, ["options timeout:2 attempts:3"]);
        let conf = ResolvConf::parse("options timeout:90\n");
        assert_eq!(conf.timeout, Duration::from_secs(30));
    }
}
