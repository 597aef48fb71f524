//! The references' module parameters as tables: each parameter's name,
//! slot, kind of value and default, for Prague and DCTCP. The catalogue
//! names them; `parameters` reads a flow's settings against them.

/// The number of slots in an entry (`EMU_CC_PARAMS`).
pub const SLOTS: usize = 12;

/// What values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer in `min..=max`.
    Integer { min: u32, max: u32 },
    /// A time, written with a unit (`25ms`, `500us`), held in microseconds,
    /// at most `max_us`.
    Duration { max_us: u32 },
    /// One of a list of words, each standing for its index (the number
    /// itself is accepted too, as the reference's module takes it).
    Choice(&'static [&'static str]),
}

/// One parameter of one congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter {
    /// The name a flow's setting uses (`ecn_fallback`).
    pub name: &'static str,
    /// The reference's module parameter (`prague_ecn_fallback`).
    pub reference: &'static str,
    /// Its slot in the map's entry (the `*_P_*` of its `bpf/cc/` file).
    pub slot: usize,
    pub kind: Kind,
    /// The reference's default, in the slot's unit.
    pub default: u32,
    /// One line for `emu cc`: what it does.
    pub meaning: &'static str,
}

/// TCP Prague's, as the reference module 0.6 (the L4S team's kernel, the
/// version with `frac_cwnd` and classic-ECN detection) has them, plus
/// `tso_floor` for the one thing that changed in its burst sizing since,
/// and `version` (0.5's defaults are in `versions`).
pub const PRAGUE: &[Parameter] = &[
    Parameter {
        name: "burst_shift",
        reference: "prague_burst_shift",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 30 },
        default: 12,
        meaning: "a GSO burst lasts at most 2^-N s of the pacing rate (12: 244 us)",
    },
    Parameter {
        name: "max_tso_segs",
        reference: "prague_max_tso_segs",
        slot: 1,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 0,
        meaning: "at most this many segments in a GSO burst; 0: no cap",
    },
    Parameter {
        name: "rtt_scaling",
        reference: "prague_rtt_scaling",
        slot: 2,
        kind: Kind::Choice(&["none", "rate", "scalable", "additive"]),
        default: 1,
        meaning: "RTT independence: how the additive increase is scaled below the target RTT",
    },
    Parameter {
        name: "rtt_target",
        reference: "prague_rtt_target",
        slot: 3,
        kind: Kind::Duration { max_us: 8_000_000 },
        default: 25_000,
        meaning: "the RTT a flow behaves as if it had (0 turns RTT independence off)",
    },
    Parameter {
        name: "rtt_transition",
        reference: "prague_rtt_transition",
        slot: 4,
        kind: Kind::Integer {
            min: 0,
            max: u32::MAX,
        },
        default: 500,
        meaning: "rounds after slow start before RTT independence applies",
    },
    Parameter {
        name: "ecn_fallback",
        reference: "prague_ecn_fallback",
        slot: 5,
        kind: Kind::Choice(&["none", "fallback", "detect"]),
        default: 0,
        meaning: "classic-ECN detection: 0 none, 1 detect and fall back to a classic \
                  response, 2 detect only",
    },
    Parameter {
        name: "tso_floor",
        reference: "(net.ipv4.tcp_min_tso_segs in version 0.6's tso_segs hook)",
        slot: 6,
        kind: Kind::Integer { min: 0, max: 1 },
        default: 0,
        meaning: "1: a GSO burst is at least net.ipv4.tcp_min_tso_segs segments (2), \
                  as in version 0.6's tso_segs hook; 0: one segment, as the reference now",
    },
    Parameter {
        name: "version",
        reference: "(MODULE_VERSION; each version's commit is listed below)",
        slot: 7,
        kind: Kind::Choice(&["0.6", "0.5"]),
        default: 0,
        meaning: "which version of the reference it follows: 0.6 (fractional window) or \
                  0.5 (the bakeoff's, of 2020-04-08), whose module defaults then apply",
    },
];

/// DCTCP's, as the kernel's `tcp_dctcp.c` has them, and `version`.
pub const DCTCP: &[Parameter] = &[
    Parameter {
        name: "shift_g",
        reference: "dctcp_shift_g",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 10 },
        default: 4,
        meaning: "alpha's gain is 2^-N per round",
    },
    Parameter {
        name: "alpha_on_init",
        reference: "dctcp_alpha_on_init",
        slot: 1,
        kind: Kind::Integer { min: 0, max: 1024 },
        default: 1024,
        meaning: "alpha at the start, in 1/1024 (1024: 1)",
    },
    Parameter {
        name: "clamp_alpha_on_loss",
        reference: "dctcp_clamp_alpha_on_loss",
        slot: 2,
        kind: Kind::Integer { min: 0, max: 1 },
        default: 0,
        meaning: "1: a retransmission timeout sets alpha to 1 (the module had it until Linux 5.1)",
    },
    Parameter {
        name: "version",
        reference: "(the module's history; each version's commit is listed below)",
        slot: 3,
        kind: Kind::Choice(&["linux", "sce-2019"]),
        default: 0,
        meaning: "which module it follows: linux (5.1 and later: alpha from CE-marked \
                  segments, a halving on any loss) or sce-2019 (the SCE tree's, as the SCE \
                  draft's tests ran it beside DCTCP-SCE: alpha from bytes under ECE, a fast \
                  retransmit cut by alpha)",
    },
];

/// Cubic-SCE's, as the SCE tree's `tcp_cubic_sce.c` has them (those of
/// the kernel's CUBIC of its time, `hystart_ack_delta` still in
/// milliseconds there).
pub const CUBIC_SCE: &[Parameter] = &[
    Parameter {
        name: "fast_convergence",
        reference: "fast_convergence",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 1 },
        default: 1,
        meaning: "1: a reduction below the last maximum lowers that maximum further \
                  ((1 + beta) / 2 of the window), yielding to newer flows",
    },
    Parameter {
        name: "beta",
        reference: "beta",
        slot: 1,
        kind: Kind::Integer { min: 1, max: 1023 },
        default: 717,
        meaning: "the window after a CE mark or a loss, in 1/1024 of the window before \
                  (717: 0.7); also sets the Reno-friendly growth",
    },
    Parameter {
        name: "initial_ssthresh",
        reference: "initial_ssthresh",
        slot: 2,
        kind: Kind::Integer {
            min: 0,
            max: u32::MAX,
        },
        default: 0,
        meaning: "slow start's threshold at the start, in segments, taken only with \
                  hystart=0; 0: none",
    },
    Parameter {
        name: "bic_scale",
        reference: "bic_scale",
        slot: 3,
        kind: Kind::Integer { min: 1, max: 1000 },
        default: 41,
        meaning: "the cubic's constant C is bic_scale * 10 / 1024 (41: 0.4)",
    },
    Parameter {
        name: "tcp_friendliness",
        reference: "tcp_friendliness",
        slot: 4,
        kind: Kind::Integer { min: 0, max: 1 },
        default: 1,
        meaning: "1: grow at least as fast as Reno would with the same beta \
                  (the Reno-friendly region)",
    },
    Parameter {
        name: "hystart",
        reference: "hystart",
        slot: 5,
        kind: Kind::Integer { min: 0, max: 1 },
        default: 1,
        meaning: "1: HyStart may end slow start before the first loss or mark",
    },
    Parameter {
        name: "hystart_detect",
        reference: "hystart_detect",
        slot: 6,
        kind: Kind::Integer { min: 0, max: 3 },
        default: 3,
        meaning: "HyStart's signals: 1 the ACK train, 2 the delay increase, 3 both",
    },
    Parameter {
        name: "hystart_low_window",
        reference: "hystart_low_window",
        slot: 7,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 16,
        meaning: "HyStart acts from this window on, in segments",
    },
    Parameter {
        name: "hystart_ack_delta",
        reference: "hystart_ack_delta (in ms there)",
        slot: 8,
        kind: Kind::Duration { max_us: 65_000 },
        default: 2_000,
        meaning: "ACKs at most this far apart make an ACK train",
    },
];

/// TCP Vegas's, as the kernel's `tcp_vegas.c` has them.
pub const VEGAS: &[Parameter] = &[
    Parameter {
        name: "alpha",
        reference: "alpha",
        slot: 0,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 2,
        meaning: "below this many segments queued, the window grows a segment a round",
    },
    Parameter {
        name: "beta",
        reference: "beta",
        slot: 1,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 4,
        meaning: "above this many segments queued, the window shrinks a segment a round",
    },
    Parameter {
        name: "gamma",
        reference: "gamma",
        slot: 2,
        kind: Kind::Integer { min: 0, max: 65535 },
        default: 1,
        meaning: "above this many segments queued, slow start ends",
    },
];

/// Reno-SCE's and DCTCP-SCE's: their references have no module parameters;
/// this one undoes a quirk of theirs, kept by default.
pub const SCE_WINDOW: &[Parameter] = &[Parameter {
    name: "unit",
    reference: "(icsk_ack.rcv_mss in the module's ACK handler)",
    slot: 0,
    kind: Kind::Choice(&["rcv_mss", "mss"]),
    default: 0,
    meaning: "the window counter's byte unit (a step is unit * cwnd; a duplicate ACK \
              counts one unit): rcv_mss, the received segments' size, 536 on a host that \
              only sends, as the reference (so about 2.7 segments of growth a round trip, \
              and as much more per SCE-marked window); mss, the sending MSS",
}];
