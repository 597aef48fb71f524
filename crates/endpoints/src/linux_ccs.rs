//! Linux 4.19's congestion controls that this kernel (and many others)
//! lacks, as emu ships them: what each follows, and the module parameters
//! of those that have any, as per-flow settings.
//!
//! Each is a BPF `struct_ops` program under `bpf/cc/` following the
//! module's `net/ipv4/tcp_NAME.c` of Linux 4.19, the kernel the
//! CoCo-Beholder thesis ran; where a kernel has the module itself, the
//! kernel's runs (as for Vegas). docs/endpoints.md says where each
//! differs from the module and from today's Linux.

use crate::parameter_tables::{Kind, Parameter};

/// The Linux release and commit the programs follow: the v4.19 tag.
pub const LINUX_4_19: &str =
    "Linux 4.19 (tag v4.19, commit 84df9525b0c27f3ebc2ebb1864fa62a97fdedb7d)";

/// `emu cc NAME`'s line on what `name` follows and which runs where the
/// kernel has the module, if it is one of these.
pub fn reference_line(name: &str) -> Option<String> {
    match name.strip_suffix("-emu") {
        Some(base) => Some(format!(
            "It follows {} (docs/endpoints.md: where it differs); it is emu's {base} under \
             another name, so that it runs beside a kernel's own {base} for A/B.",
            follows(base)?
        )),
        None => Some(format!(
            "It follows {} (docs/endpoints.md: where it differs); a kernel with its own \
             module runs that one ({name}-emu is emu's beside it, for A/B).",
            follows(name)?
        )),
    }
}

/// What the congestion control `name` follows, if it is one of these.
pub fn follows(name: &str) -> Option<String> {
    const FILES: [(&str, &str); 10] = [
        ("scalable", "tcp_scalable.c"),
        ("highspeed", "tcp_highspeed.c"),
        ("hybla", "tcp_hybla.c"),
        ("westwood", "tcp_westwood.c"),
        ("veno", "tcp_veno.c"),
        ("bic", "tcp_bic.c"),
        ("htcp", "tcp_htcp.c"),
        ("illinois", "tcp_illinois.c"),
        ("yeah", "tcp_yeah.c (and the tcp_vegas.c pieces it uses)"),
        ("nv", "tcp_nv.c"),
    ];
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, file)| format!("net/ipv4/{file} of {LINUX_4_19}"))
}

const fn switch(name: &'static str, slot: usize, default: u32, meaning: &'static str) -> Parameter {
    Parameter {
        name,
        reference: name,
        slot,
        kind: Kind::Integer { min: 0, max: 1 },
        default,
        meaning,
    }
}

/// BIC's, as `tcp_bic.c` has them.
pub const BIC: &[Parameter] = &[
    switch(
        "fast_convergence",
        0,
        1,
        "1: a loss below the last maximum lowers that maximum to (1 + beta) / 2 of the window",
    ),
    Parameter {
        name: "max_increment",
        reference: "max_increment",
        slot: 1,
        kind: Kind::Integer { min: 1, max: 65535 },
        default: 16,
        meaning: "at most this many segments of growth a round trip in the binary search",
    },
    Parameter {
        name: "low_window",
        reference: "low_window",
        slot: 2,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 14,
        meaning: "up to this window (segments) BIC behaves as Reno",
    },
    Parameter {
        name: "beta",
        reference: "beta",
        slot: 3,
        kind: Kind::Integer { min: 1, max: 1024 },
        default: 819,
        meaning: "the window after a loss, in 1/1024 of the window before (819: 0.8)",
    },
    Parameter {
        name: "initial_ssthresh",
        reference: "initial_ssthresh",
        slot: 4,
        kind: Kind::Integer {
            min: 0,
            max: u32::MAX,
        },
        default: 0,
        meaning: "slow start's threshold at the start, in segments; 0: none",
    },
    Parameter {
        name: "smooth_part",
        reference: "smooth_part",
        slot: 5,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 20,
        meaning: "round trips from last_max - B to last_max: the creep near the last maximum",
    },
];

/// H-TCP's, as `tcp_htcp.c` has them.
pub const HTCP: &[Parameter] = &[
    switch(
        "use_rtt_scaling",
        0,
        1,
        "1: alpha scales with the least RTT over 100 ms (RTT fairness)",
    ),
    switch(
        "use_bandwidth_switch",
        1,
        1,
        "1: beta falls to 0.5 when the achieved throughput changed by more than a fifth",
    ),
];

/// Hybla's, as `tcp_hybla.c` has it.
pub const HYBLA: &[Parameter] = &[Parameter {
    name: "rtt0",
    reference: "rtt0",
    slot: 0,
    kind: Kind::Integer {
        min: 1,
        max: 10_000,
    },
    default: 25,
    meaning: "the reference RTT in ms: a flow grows in time as one with this RTT would",
}];

/// Illinois's, as `tcp_illinois.c` has them.
pub const ILLINOIS: &[Parameter] = &[
    Parameter {
        name: "win_thresh",
        reference: "win_thresh",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 15,
        meaning: "below this window (segments) alpha and beta are Reno's 1 and 1/2",
    },
    Parameter {
        name: "theta",
        reference: "theta",
        slot: 1,
        kind: Kind::Integer { min: 0, max: 255 },
        default: 5,
        meaning: "round trips of low delay before alpha returns to its largest",
    },
];

/// TCP-NV's, as `tcp_nv.c` has them (its other constants are not module
/// parameters there).
pub const NV: &[Parameter] = &[
    Parameter {
        name: "nv_pad",
        reference: "nv_pad",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 10,
        meaning: "segments allowed queued beyond the window the rate predicts",
    },
    Parameter {
        name: "nv_reset_period",
        reference: "nv_reset_period",
        slot: 1,
        kind: Kind::Integer { min: 0, max: 3600 },
        default: 5,
        meaning: "seconds between renewals of the least RTT (each drawn from 3/4 to 5/4 of it)",
    },
    Parameter {
        name: "nv_min_cwnd",
        reference: "nv_min_cwnd",
        slot: 2,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 2,
        meaning: "NV's own decisions never take the window below this",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_names_its_file_and_the_commit() {
        let htcp = follows("htcp").unwrap();
        assert!(htcp.contains("net/ipv4/tcp_htcp.c"), "{htcp}");
        assert!(htcp.contains("84df9525b0c2"), "{htcp}");
        assert_eq!(follows("cubic"), None);
        let ab = reference_line("htcp-emu").unwrap();
        assert!(
            ab.contains("tcp_htcp.c") && ab.contains("beside a kernel's own htcp"),
            "{ab}"
        );
        assert!(reference_line("htcp")
            .unwrap()
            .contains("htcp-emu is emu's"));
        assert_eq!(reference_line("cubic-emu"), None);
        for name in [
            "scalable",
            "highspeed",
            "hybla",
            "westwood",
            "veno",
            "bic",
            "htcp",
        ] {
            for name in [name.to_string(), format!("{name}-emu")] {
                let endpoint = crate::find(&name).expect("in the catalogue");
                assert!(reference_line(&name).is_some(), "{name}");
                let base = crate::find(name.trim_end_matches("-emu")).unwrap();
                assert_eq!(
                    endpoint.parameters, base.parameters,
                    "{name}: the same settings"
                );
                assert_eq!(endpoint.settings_id, base.settings_id, "{name}");
            }
        }
    }
}
