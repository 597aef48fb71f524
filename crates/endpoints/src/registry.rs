//! Registering emu's congestion controls for a run, or sharing those
//! another emu registered, and knowing which of emu's are registered now.
//!
//! A congestion control is registered through a BPF link. The kernel keeps
//! it registered while any descriptor of that link is open, so emu holds
//! one for the run and closes it at the end; after `kill -9` the kernel
//! closes it. Two emus at once share one registration (the second takes a
//! descriptor of the first's link by its id), so the congestion control
//! stays while either runs. Loading is serialised across emus by a lock
//! file, so two emus starting together never race to register one name.
//!
//! Cost: one object load (a few milliseconds of verification) per run;
//! nothing per packet.

use crate::catalogue::{self, Endpoint};
use crate::error::{EndpointError, Result};
use crate::kernel;
use crate::object::{self, OBJECT, OBJECT_RFC3168, SHARED};
use libbpf_rs::query::{LinkInfoIter, LinkTypeInfo, MapInfoIter};
use libbpf_rs::{Link, MapCore, MapHandle, Object, ObjectBuilder};
use std::collections::HashMap;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// Where a congestion control a run uses comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// emu's BPF program, registered by this emu.
    Registered,
    /// emu's BPF program, registered by another emu that is running.
    Shared,
    /// The kernel's own (a module or built in): emu's is not loaded.
    Kernel,
}

impl Origin {
    fn describe(self) -> &'static str {
        match self {
            Origin::Registered => "emu's BPF program, registered for this run",
            Origin::Shared => "emu's BPF program, registered by another emu that is running",
            Origin::Kernel => "the kernel's own",
        }
    }
}

/// The machine-wide lock that serialises loading across emus.
const LOCK: &str = "/run/emu/endpoints.lock";

/// emu's congestion controls and helpers, loaded for one run. Dropping it
/// unregisters what only this emu held.
pub struct Loaded {
    /// Registrations made here (a link each). Dropping a struct_ops link
    /// closes its descriptor and nothing more (libbpf detaches a real link
    /// by closing it): a registration another emu shares stays until that
    /// emu closes its descriptor too. Never `disconnect` them: a
    /// disconnected link's descriptor is never closed, so the registration
    /// would outlive this `Loaded` until the process ends.
    _own: Vec<Link>,
    /// Descriptors of other emus' registrations, held while this one runs.
    _shared: Vec<OwnedFd>,
    /// The object: the hosts' helpers and the map they share with the SCE
    /// congestion controls.
    object: Object,
    pub(crate) origins: Vec<(&'static Endpoint, Origin)>,
    /// Whether this kernel negotiates AccECN, so that Prague asks for it.
    accecn: bool,
}

impl Loaded {
    /// Makes `names` (those of [`catalogue::ENDPOINTS`]; others are left
    /// to the kernel) usable by sockets, and loads the hosts' helpers. A
    /// name the kernel has already (its own DCTCP, say) is the kernel's.
    pub fn load(names: &[&str]) -> Result<Loaded> {
        let mut wanted: Vec<&'static Endpoint> =
            names.iter().filter_map(|n| catalogue::find(n)).collect();
        wanted.sort_by_key(|e| e.name);
        wanted.dedup();
        let wanted_names: Vec<&str> = wanted.iter().map(|e| e.name).collect();
        kernel::check_can_load(&wanted_names)?;
        object::capture_messages();
        let _lock = lock()?;

        let by_emu = registered_by_emu();
        let kernels = kernel::available();
        let mut origins = Vec::new();
        let mut shared = Vec::new();
        for endpoint in &wanted {
            let origin = if let Some(&link) = by_emu.get(endpoint.name) {
                shared.push(link_descriptor(link).map_err(|e| {
                    EndpointError(format!(
                        "{}: taking a hold on the registration another emu made: {e}",
                        endpoint.name
                    ))
                })?);
                Origin::Shared
            } else if kernels.iter().any(|k| k == endpoint.kernel_name) {
                Origin::Kernel
            } else {
                Origin::Registered
            };
            origins.push((*endpoint, origin));
        }
        let to_register: Vec<&'static Endpoint> = origins
            .iter()
            .filter(|(_, o)| *o == Origin::Registered)
            .map(|(e, _)| *e)
            .collect();
        let accecn = kernel::has_accecn();
        let object = open_and_load(&to_register, accecn)?;
        let mut own = Vec::new();
        let mut object = object;
        for endpoint in to_register {
            own.push(register(&mut object, endpoint)?);
        }
        Ok(Loaded {
            _own: own,
            _shared: shared,
            object,
            origins,
            accecn,
        })
    }

    /// One line per congestion control, for the user: which one runs.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .origins
            .iter()
            .map(|(e, o)| {
                let kernel_name = if e.kernel_name == e.name {
                    String::new()
                } else {
                    format!(" (sockets choose it as {})", e.kernel_name)
                };
                format!("{}{kernel_name}: {}", e.name, o.describe())
            })
            .collect();
        if self.accecn && self.origins.iter().any(|(e, _)| e.name == "prague") {
            lines.push(format!(
                "prague asks for AccECN (Linux {} negotiates it where both ends' namespaces \
                 have prague as their default congestion control), else RFC 3168 ECN",
                kernel::release()
            ));
        }
        lines
    }

    pub(crate) fn object(&self) -> &Object {
        &self.object
    }
}

/// Opens the object with only `register`'s `struct_ops` maps created, the
/// shared map reused from a running emu if there is one, and loads it:
/// the object whose Prague asks for AccECN where the kernel negotiates it
/// (a kernel without refuses the flag), the other elsewhere.
fn open_and_load(register: &[&'static Endpoint], accecn: bool) -> Result<Object> {
    let fail = |doing: &str, e: libbpf_rs::Error| {
        let said = object::take_messages();
        let mut message = format!("{doing} emu's BPF programs: {e}");
        if !said.is_empty() {
            message += &format!("; libbpf said:\n  {}", said.join("\n  "));
        }
        EndpointError(message)
    };
    let mut open = ObjectBuilder::default()
        .open_memory(if accecn { OBJECT } else { OBJECT_RFC3168 })
        .map_err(|e| fail("opening", e))?;
    let mut existing = Vec::new();
    for name in SHARED {
        if let Some(handle) = newest_map(name).map_err(|e| {
            EndpointError(format!(
                "sharing the map {name} of another emu that is running: {e}"
            ))
        })? {
            existing.push((name, handle));
        }
    }
    for mut map in open.maps_mut() {
        let name = map.name().to_string_lossy().into_owned();
        if let Some(endpoint) = catalogue::by_map(&name) {
            let wanted = register.iter().any(|r| r.map == endpoint.map);
            map.set_autocreate(wanted)
                .map_err(|e| fail("choosing", e))?;
        } else if let Some((_, handle)) = existing.iter().find(|(n, _)| *n == name) {
            if (handle.key_size(), handle.value_size()) != (map.key_size(), map.value_size()) {
                return Err(EndpointError(format!(
                    "another emu that is running keeps {name} with {}-byte keys and {}-byte \
                     entries, where this emu's are {} and {} bytes (a different version of \
                     emu): run this one when that one has ended",
                    handle.key_size(),
                    handle.value_size(),
                    map.key_size(),
                    map.value_size()
                )));
            }
            map.reuse_fd(handle.as_fd())
                .map_err(|e| fail("sharing the map of", e))?;
        }
    }
    open.load().map_err(|e| {
        let error = fail("loading", e);
        EndpointError(format!(
            "{} (Linux {}; emu's congestion controls need BPF struct_ops, Linux 6.4 or later)",
            error.0,
            kernel::release()
        ))
    })
}

/// Registers `endpoint`'s congestion control from the loaded object.
fn register(object: &mut Object, endpoint: &Endpoint) -> Result<Link> {
    let mut map = object
        .maps_mut()
        .find(|m| m.name().to_string_lossy() == endpoint.map)
        .ok_or_else(|| {
            EndpointError(format!(
                "{}: the object has no map {}",
                endpoint.name, endpoint.map
            ))
        })?;
    map.attach_struct_ops().map_err(|e| {
        let exists = matches!(e.kind(), libbpf_rs::ErrorKind::AlreadyExists);
        if exists {
            EndpointError(format!(
                "{}: another congestion control named {} was registered meanwhile, not by emu; \
                 remove it (it shows in /proc/sys/net/ipv4/tcp_available_congestion_control) and run again",
                endpoint.name, endpoint.kernel_name
            ))
        } else {
            EndpointError(format!(
                "{}: registering it failed: {e} (Linux {}; registering through a BPF link needs Linux 6.4 or later)",
                endpoint.name,
                kernel::release()
            ))
        }
    })
}

/// emu's congestion controls registered now, by name, with their links'
/// ids. Empty without the privilege to list links.
pub fn registered_by_emu() -> HashMap<&'static str, u32> {
    let maps: HashMap<u32, String> = MapInfoIter::default()
        .map(|m| (m.id, m.name.to_string_lossy().into_owned()))
        .collect();
    LinkInfoIter::default()
        .filter_map(|link| match link.info {
            LinkTypeInfo::StructOps(ops) => {
                let endpoint = catalogue::by_map(maps.get(&ops.map_id)?)?;
                Some((endpoint.name, link.id))
            }
            _ => None,
        })
        .collect()
}

/// The newest map of that name: the one every running emu shares (each
/// load reuses it, so there is at most one in use). An error where one
/// exists, so that a run never makes a second one beside it.
fn newest_map(name: &str) -> libbpf_rs::Result<Option<MapHandle>> {
    let newest = MapInfoIter::default()
        .filter(|m| m.name.to_string_lossy() == name)
        .map(|m| m.id)
        .max();
    newest.map(MapHandle::from_map_id).transpose()
}

/// A descriptor of the link with this id, which keeps it alive.
fn link_descriptor(id: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: a plain system call wrapper; it returns a new descriptor or
    // a negative error.
    let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
    if fd < 0 {
        return Err(std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: the descriptor was just created and is owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Takes the machine-wide loading lock (held until dropped).
fn lock() -> Result<nix::fcntl::Flock<std::fs::File>> {
    let path = std::path::Path::new(LOCK);
    let fail = |e: String| EndpointError(format!("taking the lock {LOCK}: {e}"));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| fail(e.to_string()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| fail(e.to_string()))
}
