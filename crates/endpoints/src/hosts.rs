//! The helpers emu attaches to a host's device, for what a congestion
//! control cannot do itself on a kernel before 7.0:
//! - egress: an L4S sender's data leaves ECT(1) (the kernel writes
//!   ECT(0)); an SCE receiver's ACKs carry ESCE for the ECT(1) bytes it
//!   received; a SYN leaves Not-ECT, as RFC 3168 has it, so a listener
//!   whose congestion control does not need ECN still accepts ECN;
//! - ingress: ECT(1) arrivals counted for the echo, ESCE ACKs counted for
//!   the SCE sender.
//!
//! They are attached to the device of a namespace emu built (a host's
//! TUN device, or the outer end of a shell's), and go with it. They act
//! only on sockets whose congestion control marked them (its socket
//! mark), so other traffic passes untouched. Cost: a few dozen
//! instructions per packet in the host's kernel, none in emu.

use crate::catalogue::Marking;
use crate::error::{EndpointError, Result};
use crate::object::{EGRESS, INGRESS};
use crate::registry::Loaded;
use libbpf_rs::{TcHookBuilder, TC_EGRESS, TC_INGRESS};
use std::os::fd::{AsFd, OwnedFd};

/// A namespace of emu's own keeps its connections from holding emu's
/// programs past the run: a socket keeps its congestion control's
/// programs loaded until it is gone, and a connection its program left
/// behind (killed with data unsent) would keep retrying for minutes
/// through a device that no longer exists; with one retry it is gone
/// within a second of emu's end.
pub const ORPHAN_RETRIES: (&str, &str) = ("net.ipv4.tcp_orphan_retries", "1");

/// A sender in a namespace of emu's own asks for ECN on every connection:
/// a program that picks its congestion control after connecting (iperf3
/// does) sends its SYN under the namespace's default, and without ECN
/// TCP Prague and DCTCP fall back to Reno.
pub const ASK_FOR_ECN: (&str, &str) = ("net.ipv4.tcp_ecn", "1");

/// What emu sets in a namespace of its own whose sockets use its
/// congestion controls (never in the host's).
pub const NAMESPACE: [(&str, &str); 2] = [ORPHAN_RETRIES, ASK_FOR_ECN];

/// The tc handle and priority of emu's filters.
const HANDLE: u32 = 0xe5c;
const PRIORITY: u32 = 1;

/// The helpers' programs, each held by a descriptor of its own, so they
/// may go to any thread (one inside a host's namespace attaches them) and
/// outlive the [`Loaded`] set they came from. The ingress program, which
/// only SCE feedback needs, is there only when an SCE congestion control
/// is.
#[derive(Debug)]
pub struct HostHelpers {
    egress: OwnedFd,
    ingress: Option<OwnedFd>,
}

impl Loaded {
    /// The helpers to attach to the hosts of this run.
    pub fn helpers(&self) -> Result<HostHelpers> {
        let find = |name: &str| {
            let program = self
                .object()
                .progs()
                .find(|p| p.name().to_string_lossy() == name)
                .ok_or_else(|| EndpointError(format!("emu's BPF object has no program {name}")))?;
            program
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| EndpointError(format!("holding the program {name}: {e}")))
        };
        let sce = self.origins.iter().any(|(e, _)| e.marking == Marking::Sce);
        Ok(HostHelpers {
            egress: find(EGRESS)?,
            ingress: sce.then(|| find(INGRESS)).transpose()?,
        })
    }
}

impl HostHelpers {
    /// Attaches the helpers to `device` in the calling thread's network
    /// namespace (run it inside the namespace).
    pub fn attach(&self, device: &str) -> Result<()> {
        let fail = |what: &str, e: String| {
            EndpointError(format!(
                "attaching emu's host helpers ({what}) to {device}: {e}"
            ))
        };
        let ifindex = nix::net::if_::if_nametoindex(device)
            .map_err(|e| fail("finding the device", e.to_string()))?;
        let ingress = self
            .ingress
            .as_ref()
            .map(|p| (INGRESS, p.as_fd(), TC_INGRESS));
        for (name, program, point) in
            std::iter::once((EGRESS, self.egress.as_fd(), TC_EGRESS)).chain(ingress)
        {
            let mut hook = TcHookBuilder::new(program)
                .ifindex(ifindex as i32)
                .replace(true)
                .handle(HANDLE)
                .priority(PRIORITY)
                .hook(point);
            hook.create().map_err(|e| fail(name, e.to_string()))?;
            hook.attach().map_err(|e| fail(name, e.to_string()))?;
        }
        Ok(())
    }
}
