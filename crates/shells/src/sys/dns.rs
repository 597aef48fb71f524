//! Names inside: the command resolves them as the host does, whatever
//! resolver the host has, even one on a loopback address (127.0.0.53 of
//! systemd-resolved, 127.0.0.1 of dnsmasq or unbound, ::1), which the
//! command's namespace cannot reach.
//!
//! emu reads the host's `/etc/resolv.conf`, starts its relay
//! (`dns_relay`), and gives the command a mount namespace of its own in
//! which `/etc/resolv.conf` names the relay and keeps the host's search
//! domains and options; `/etc/hosts` and the rest are the host's.
//! Where the relay listens decides what lookups cross:
//!
//! - [`DnsRoute::Path`] (the default): on the host's end of the outermost
//!   shell (`$EMU_BASE`, `$EMU_BASE6`), so a lookup crosses every shell
//!   like any other packet, with the path's delay and loss, whatever
//!   nameserver the host uses;
//! - [`DnsRoute::Host`]: on the command's own loopback, so lookups go to
//!   the host's nameservers without crossing the path.
//!
//! Programs that ask a daemon of the host over a Unix socket instead of
//! sending DNS (systemd-resolved's `nss-resolve`, `nscd`) would skip the
//! path whatever its route: in the command's namespace their sockets are
//! covered by empty files, so the C library falls back to DNS.
//!
//! If the host has no resolver (no resolv.conf, or nothing listening on
//! the loopback address it names), emu says at start that names will not
//! resolve, and leaves the command the host's file: its lookups fail as
//! the host's do.

use crate::error::Result;
use crate::spec::DnsRoute;
use crate::sys::addressing::AddressPair;
use crate::sys::dns_relay::{self, Relay, Upstream};
use crate::sys::mount_namespace::MountNamespace;
use crate::sys::netns::NetNs;
use crate::sys::resolv_conf::ResolvConf;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The file the C library reads its nameservers from.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Sockets of host daemons that answer lookups without DNS.
const LOOKUP_DAEMON_SOCKETS: [&str; 2] = [
    "/run/systemd/resolve/io.systemd.Resolve",
    "/run/nscd/socket",
];

/// Where the relay listens with [`DnsRoute::Host`]: the command's own
/// loopback, at systemd-resolved's usual stub address.
const COMMAND_STUB4: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 53);

/// What the command's lookups need while it runs.
pub struct CommandNames {
    _relay: Relay,
    mounts: MountNamespace,
}

impl CommandNames {
    /// The mount namespace the command is to enter.
    pub fn mount_namespace(&self) -> &MountNamespace {
        &self.mounts
    }
}

/// Readies the command's lookups: the relay on `route`'s side, asking
/// the host's nameservers from `host`; the command's own resolv.conf.
/// None, after saying why on stderr, when names cannot resolve inside
/// (the host has no resolver, or `rootless` keeps the host out of reach)
/// or what they need cannot be made here: the command then runs as it
/// would without emu's help, with the host's resolv.conf.
pub fn prepare(
    route: DnsRoute,
    host: &Arc<NetNs>,
    outermost: &AddressPair,
    command: &NetNs,
    rootless: bool,
) -> Option<CommandNames> {
    let conf = host_resolver(host, rootless)?;
    let (listen_ns, relay_at) = match route {
        DnsRoute::Path => (host.as_ref(), (outermost.outer4, outermost.outer6)),
        DnsRoute::Host => (command, (COMMAND_STUB4, Ipv6Addr::LOCALHOST)),
    };
    let started =
        start(&conf, host, &[listen_ns], relay_at).map(|(mut relays, mounts)| CommandNames {
            _relay: relays.remove(0),
            mounts,
        });
    warn_unless_started(started)
}

/// What the lookups of an experiment's hosts need while it runs: a relay
/// on each host's loopback, asking the host's nameservers. The hosts'
/// paths lead only to each other, so lookups cross none of them.
pub struct HostNames {
    _relays: Vec<Relay>,
}

/// Readies the lookups of the programs run in `hosts` (each started by
/// [`NetNs::program`], which enters the mount namespace made here). None,
/// after saying why, when names cannot resolve in them.
pub fn prepare_hosts(hosts: &[&NetNs]) -> Option<HostNames> {
    let machine = Arc::new(NetNs::current().ok()?);
    let conf = host_resolver(&machine, false)?;
    let started = start(&conf, &machine, hosts, (COMMAND_STUB4, Ipv6Addr::LOCALHOST));
    let (relays, mounts) = warn_unless_started(started)?;
    let mounts = Arc::new(mounts);
    for host in hosts {
        host.enter_with_programs(mounts.clone());
    }
    Some(HostNames { _relays: relays })
}

/// The host's resolver configuration, or None after saying on stderr why
/// names will not resolve inside.
fn host_resolver(host: &NetNs, rootless: bool) -> Option<ResolvConf> {
    let text = match std::fs::read_to_string(RESOLV_CONF) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "emu: names will not resolve inside: {RESOLV_CONF} cannot be read ({e}), so this host has no resolver"
            );
            return None;
        }
    };
    if rootless {
        eprintln!(
            "emu: names will not resolve inside: with --rootless the host's network, its resolvers with it, is out of reach"
        );
        return None;
    }
    let conf = ResolvConf::parse(&text);
    match no_resolver(&conf, host) {
        Ok(None) => {}
        Ok(Some(silent)) => {
            eprintln!(
                "emu: names will not resolve inside, as they do not outside: nothing listens for DNS at {silent}, which {RESOLV_CONF} names"
            );
            return None;
        }
        Err(e) => eprintln!("emu: warning: could not check the host's resolver: {e}"),
    }
    Some(conf)
}

/// What was started, or None after a warning that lookups inside may
/// fail (programs then see the host's resolv.conf).
fn warn_unless_started<T>(started: Result<T>) -> Option<T> {
    started
        .map_err(|e| {
            eprintln!("emu: warning: names may not resolve inside (programs there see the host's {RESOLV_CONF}): {e}")
        })
        .ok()
}

/// A relay in each of `listen_namespaces`, listening on port 53 of the
/// addresses `relay_at` there and asking the nameservers of `conf` from
/// `host`; and a mount namespace whose resolv.conf names those addresses.
fn start(
    conf: &ResolvConf,
    host: &Arc<NetNs>,
    listen_namespaces: &[&NetNs],
    relay_at: (Ipv4Addr, Ipv6Addr),
) -> Result<(Vec<Relay>, MountNamespace)> {
    let (v4, v6) = relay_at;
    let mut relays = Vec::new();
    for listen_ns in listen_namespaces {
        let upstream = Upstream {
            namespace: host.clone(),
            nameservers: conf.nameservers.clone(),
            wait: conf.timeout,
        };
        let (relay, unbound) =
            Relay::start(listen_ns, &[IpAddr::V4(v4), IpAddr::V6(v6)], upstream)?;
        for missed in unbound {
            eprintln!(
                "emu: warning: port 53 of {} is not emu's ({}): another program listens for DNS on every address of the host, and lookups sent there go to it",
                missed.address, missed.error
            );
        }
        relays.push(relay);
    }
    let mut files = vec![(
        RESOLV_CONF.to_string(),
        conf.for_command(v4, v6).into_bytes(),
    )];
    files.extend(
        LOOKUP_DAEMON_SOCKETS
            .iter()
            .filter(|path| std::path::Path::new(path).exists())
            .map(|path| (path.to_string(), Vec::new())),
    );
    Ok((relays, MountNamespace::with_files(&files)?))
}

/// The nameservers when every one is on a loopback address of the host
/// and nothing listens at any of them (known from the kernel's lists of
/// sockets, without sending anything); None otherwise.
fn no_resolver(conf: &ResolvConf, host: &NetNs) -> Result<Option<String>> {
    let servers = conf.nameservers.clone();
    if !servers.iter().all(|s| s.ip().is_loopback()) {
        return Ok(None);
    }
    let silent = host.run(move || Ok(servers.iter().all(|s| !dns_relay::listens(*s))))?;
    Ok(silent.then(|| {
        conf.nameservers
            .iter()
            .map(|s| s.ip().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    }))
}
