//! What emu ships, by the names users write (`cc = "prague"`,
//! `iperf3 -C prague`), and what each asks of the hosts.

/// What a congestion control's packets need from the host's helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marking {
    /// Its data goes out ECT(0), as the kernel writes it (RFC 3168's
    /// codepoint; DCTCP in its RFC 8257 form).
    Ect0,
    /// Its data goes out ECT(1), the L4S identifier: the host's egress
    /// helper rewrites the kernel's ECT(0).
    Ect1,
    /// It reads SCE feedback: its receivers echo ECT(1) arrivals in the
    /// ESCE bit of their ACKs, and its host's ingress helper counts them.
    Sce,
    /// It needs no ECN: a loss- and delay-based sender, whose packets are
    /// ECN-capable only where its host asks for ECN itself.
    None,
}

impl Marking {
    /// Whether its sockets need ECN negotiated to behave as themselves.
    pub fn needs_ecn(self) -> bool {
        self != Marking::None
    }
}

use crate::linux_ccs;
use crate::parameter_tables::{self, Parameter};

/// One congestion control emu ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The name users write (`cc = "reno-sce"`).
    pub name: &'static str,
    /// The name the kernel knows it by, which a socket chooses it by
    /// (`iperf3 -C reno_sce`): a BPF congestion control's name may hold
    /// letters, digits, `_` and `.` only, and at most 15 bytes.
    pub kernel_name: &'static str,
    /// The BPF `struct_ops` map that registers it, in its `bpf/cc/` file
    /// (also how emu recognises its own among the kernel's registrations).
    pub map: &'static str,
    pub marking: Marking,
    /// What it behaves as on a connection that did not negotiate ECN.
    pub without_ecn: &'static str,
    /// One line for `emu cc`: what it is and what it follows.
    pub summary: &'static str,
    /// Its reference's module parameters, settable per flow.
    pub parameters: &'static [Parameter],
    /// Which congestion control an entry of `emu_cc_params` is for
    /// (`EMU_CC_*` in `bpf/params.h`); 0 for one that takes no settings.
    pub settings_id: u16,
}

/// Everything emu ships.
pub const ENDPOINTS: [Endpoint; 27] = [
    Endpoint {
        name: "dctcp",
        kernel_name: "dctcp",
        map: "emu_dctcp",
        marking: Marking::Ect0,
        without_ecn: "Reno",
        summary: "DCTCP (RFC 8257), with its receiver's per-packet CE echo",
        parameters: parameter_tables::DCTCP,
        settings_id: 1,
    },
    Endpoint {
        name: "prague",
        kernel_name: "prague",
        map: "emu_prague",
        marking: Marking::Ect1,
        without_ecn: "Reno",
        summary: "TCP Prague (L4S): scalable, ECT(1), paced, RTT-independent; Reno without ECN",
        parameters: parameter_tables::PRAGUE,
        settings_id: 2,
    },
    Endpoint {
        name: "reno-sce",
        kernel_name: "reno_sce",
        map: "emu_reno_sce",
        marking: Marking::Sce,
        without_ecn: "Reno",
        summary: "Reno with SCE: a small reduction per SCE mark, Reno's response to CE and loss",
        parameters: parameter_tables::SCE_WINDOW,
        settings_id: 32,
    },
    Endpoint {
        name: "cubic-sce",
        kernel_name: "cubic_sce",
        map: "emu_cubic_sce",
        marking: Marking::Sce,
        without_ecn: "CUBIC",
        summary: "CUBIC with SCE: SCE marks pull the curve's origin toward the window",
        parameters: parameter_tables::CUBIC_SCE,
        settings_id: 3,
    },
    Endpoint {
        name: "dctcp-sce",
        kernel_name: "dctcp_sce",
        map: "emu_dctcp_sce",
        marking: Marking::Sce,
        without_ecn: "Reno",
        summary:
            "DCTCP-style SCE: half the SCE-marked share of each window off it, a quarter on CE",
        parameters: parameter_tables::SCE_WINDOW,
        settings_id: 33,
    },
    Endpoint {
        name: "vegas",
        kernel_name: "vegas",
        map: "emu_vegas",
        marking: Marking::None,
        without_ecn: "Vegas",
        summary: "TCP Vegas, as the kernel's tcp_vegas: delay-based, 2 to 4 segments queued; \
                  Reno on loss",
        parameters: parameter_tables::VEGAS,
        settings_id: 4,
    },
    Endpoint {
        name: "scalable",
        kernel_name: "scalable",
        map: "emu_scalable",
        marking: Marking::None,
        without_ecn: "Scalable TCP",
        summary: "Scalable TCP, as Linux 4.19's tcp_scalable: a segment every 50 ACKs, 1/8 off at a loss",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "highspeed",
        kernel_name: "highspeed",
        map: "emu_highspeed",
        marking: Marking::None,
        without_ecn: "HighSpeed TCP",
        summary: "HighSpeed TCP (RFC 3649), as Linux 4.19's tcp_highspeed: growth and cut from the window's row",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "hybla",
        kernel_name: "hybla",
        map: "emu_hybla",
        marking: Marking::None,
        without_ecn: "Hybla",
        summary: "TCP Hybla, as Linux 4.19's tcp_hybla: grows as a 25 ms flow would whatever its RTT",
        parameters: linux_ccs::HYBLA,
        settings_id: 22,
    },
    Endpoint {
        name: "westwood",
        kernel_name: "westwood",
        map: "emu_westwood",
        marking: Marking::None,
        without_ecn: "Westwood+",
        summary: "TCP Westwood+, as Linux 4.19's tcp_westwood: Reno, with ssthresh from the bandwidth estimate",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "veno",
        kernel_name: "veno",
        map: "emu_veno",
        marking: Marking::None,
        without_ecn: "Veno",
        summary: "TCP Veno, as Linux 4.19's tcp_veno: a fifth off for a loss with under 3 segments queued",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "bic",
        kernel_name: "bic",
        map: "emu_bic",
        marking: Marking::None,
        without_ecn: "BIC",
        summary: "BIC TCP, as Linux 4.19's tcp_bic: binary search for the window of the last loss",
        parameters: linux_ccs::BIC,
        settings_id: 20,
    },
    Endpoint {
        name: "htcp",
        kernel_name: "htcp",
        map: "emu_htcp",
        marking: Marking::None,
        without_ecn: "H-TCP",
        summary: "H-TCP, as Linux 4.19's tcp_htcp: growth rising with the time since the last loss",
        parameters: linux_ccs::HTCP,
        settings_id: 21,
    },
    Endpoint {
        name: "illinois",
        kernel_name: "illinois",
        map: "emu_illinois",
        marking: Marking::None,
        without_ecn: "Illinois",
        summary: "TCP Illinois, as Linux 4.19's tcp_illinois: growth and cut set by the queueing delay",
        parameters: linux_ccs::ILLINOIS,
        settings_id: 23,
    },
    Endpoint {
        name: "yeah",
        kernel_name: "yeah",
        map: "emu_yeah",
        marking: Marking::None,
        without_ecn: "YeAH",
        summary: "YeAH-TCP, as Linux 4.19's tcp_yeah: Scalable while the queue is short, Reno with decongestion",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "nv",
        kernel_name: "nv",
        map: "emu_nv",
        marking: Marking::None,
        without_ecn: "TCP-NV",
        summary: "TCP-NV, as Linux 4.19's tcp_nv: keeps the window the rate's slope predicts, plus nv_pad",
        parameters: linux_ccs::NV,
        settings_id: 24,
    },
    Endpoint {
        name: "scalable-emu",
        kernel_name: "scalable_emu",
        map: "emu_scalable_e",
        marking: Marking::None,
        without_ecn: "Scalable TCP",
        summary: "emu's scalable under another name, to run beside a kernel's own scalable (A/B)",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "highspeed-emu",
        kernel_name: "highspeed_emu",
        map: "emu_highspeed_e",
        marking: Marking::None,
        without_ecn: "HighSpeed TCP",
        summary: "emu's highspeed under another name, to run beside a kernel's own highspeed (A/B)",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "hybla-emu",
        kernel_name: "hybla_emu",
        map: "emu_hybla_e",
        marking: Marking::None,
        without_ecn: "Hybla",
        summary: "emu's hybla under another name, to run beside a kernel's own hybla (A/B)",
        parameters: linux_ccs::HYBLA,
        settings_id: 22,
    },
    Endpoint {
        name: "westwood-emu",
        kernel_name: "westwood_emu",
        map: "emu_westwood_e",
        marking: Marking::None,
        without_ecn: "Westwood+",
        summary: "emu's westwood under another name, to run beside a kernel's own westwood (A/B)",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "veno-emu",
        kernel_name: "veno_emu",
        map: "emu_veno_e",
        marking: Marking::None,
        without_ecn: "Veno",
        summary: "emu's veno under another name, to run beside a kernel's own veno (A/B)",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "bic-emu",
        kernel_name: "bic_emu",
        map: "emu_bic_e",
        marking: Marking::None,
        without_ecn: "BIC",
        summary: "emu's bic under another name, to run beside a kernel's own bic (A/B)",
        parameters: linux_ccs::BIC,
        settings_id: 20,
    },
    Endpoint {
        name: "htcp-emu",
        kernel_name: "htcp_emu",
        map: "emu_htcp_e",
        marking: Marking::None,
        without_ecn: "H-TCP",
        summary: "emu's htcp under another name, to run beside a kernel's own htcp (A/B)",
        parameters: linux_ccs::HTCP,
        settings_id: 21,
    },
    Endpoint {
        name: "illinois-emu",
        kernel_name: "illinois_emu",
        map: "emu_illinois_e",
        marking: Marking::None,
        without_ecn: "Illinois",
        summary: "emu's illinois under another name, to run beside a kernel's own illinois (A/B)",
        parameters: linux_ccs::ILLINOIS,
        settings_id: 23,
    },
    Endpoint {
        name: "yeah-emu",
        kernel_name: "yeah_emu",
        map: "emu_yeah_e",
        marking: Marking::None,
        without_ecn: "YeAH",
        summary: "emu's yeah under another name, to run beside a kernel's own yeah (A/B)",
        parameters: &[],
        settings_id: 0,
    },
    Endpoint {
        name: "nv-emu",
        kernel_name: "nv_emu",
        map: "emu_nv_e",
        marking: Marking::None,
        without_ecn: "TCP-NV",
        summary: "emu's nv under another name, to run beside a kernel's own nv (A/B)",
        parameters: linux_ccs::NV,
        settings_id: 24,
    },
    Endpoint {
        name: "relentless",
        kernel_name: "relentless",
        map: "emu_relentless",
        marking: Marking::Ect1,
        without_ecn: "Reno",
        summary: "Relentless as the AQM evaluation thesis ran it: half a segment off per CE mark, \
                  Reno's growth, halving on loss; ECT(1)",
        parameters: &[],
        settings_id: 0,
    },
];

/// The congestion control emu ships under `name`, as users write it or
/// as the kernel knows it, if any.
pub fn find(name: &str) -> Option<&'static Endpoint> {
    ENDPOINTS
        .iter()
        .find(|e| e.name == name || e.kernel_name == name)
}

/// The congestion control whose `struct_ops` map is named `map`.
pub fn by_map(map: &str) -> Option<&'static Endpoint> {
    ENDPOINTS.iter().find(|e| e.map == map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernel_and_are_unique() {
        for (i, e) in ENDPOINTS.iter().enumerate() {
            // TCP_CA_NAME_MAX is 16 with the terminating NUL; BPF object
            // names (the map's) are 15 bytes at most.
            assert!(e.kernel_name.len() < 16, "{}", e.kernel_name);
            assert!(
                e.kernel_name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
                "{}",
                e.kernel_name
            );
            assert_eq!(find(e.kernel_name), Some(e));
            assert!(e.map.len() < 16, "{}", e.map);
            assert!(e.map.starts_with("emu_"), "{}", e.map);
            for other in &ENDPOINTS[i + 1..] {
                assert_ne!(e.name, other.name);
                assert_ne!(e.map, other.map);
            }
            assert_eq!(find(e.name), Some(e));
            assert_eq!(by_map(e.map), Some(e));
        }
        assert_eq!(find("cubic"), None);
        assert_eq!(find("vegas").map(|e| e.map), Some("emu_vegas"));
    }
}
