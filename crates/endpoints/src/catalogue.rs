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
pub const ENDPOINTS: [Endpoint; 7] = [
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
