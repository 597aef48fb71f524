//! The registry of disciplines: each one's name, a line on what it is, and
//! its options as `emu queues` lists them. The option tables live beside
//! each discipline's parser; this file only gathers them.

pub use crate::grammar::Opt;
use crate::{
    cake, codel, curvy_red, dualpi2, dualq, fifo, flow_queues, fq_codel, fq_pie, instant_red, pie,
    red, sce_options,
};

/// One discipline in the catalogue shown by `emu queues`.
pub struct Discipline {
    pub name: &'static str,
    pub summary: &'static str,
    /// Groups of options; disciplines that share options share a group.
    pub options: &'static [&'static [Opt]],
}

impl Discipline {
    pub fn all_options(&self) -> impl Iterator<Item = &'static Opt> {
        self.options.iter().flat_map(|group| group.iter())
    }
}

/// Every discipline emu offers, with its options and defaults.
// Long: a table, one entry per discipline, read top to bottom; split, it
// would only scatter the list `emu queues` prints.
pub fn catalogue() -> &'static [Discipline] {
    &[
        Discipline {
            name: "infinite",
            summary: "unbounded FIFO (never drops)",
            options: &[],
        },
        Discipline {
            name: "droptail",
            summary: "FIFO that drops arrivals beyond its limit (at least one limit required)",
            options: &[fifo::OPTIONS],
        },
        Discipline {
            name: "drophead",
            summary:
                "FIFO that drops its oldest packets to make room (at least one limit required)",
            options: &[fifo::OPTIONS],
        },
        Discipline {
            name: "pfifo",
            summary: "tc's spelling of a packet-limited droptail: 'pfifo limit N' is 'droptail packets N'",
            options: &[fifo::PFIFO_OPTIONS],
        },
        Discipline {
            name: "codel",
            summary: "CoDel (RFC 8289), Linux fixed-point arithmetic unless 'variant rfc'",
            options: &[codel::OWN_OPTIONS, codel::SHARED_OPTIONS],
        },
        Discipline {
            name: "fq_codel",
            summary: "FQ-CoDel (RFC 8290): per-flow CoDel queues served by DRR++",
            options: &[
                flow_queues::OPTIONS,
                fq_codel::OWN_OPTIONS,
                codel::SHARED_OPTIONS,
            ],
        },
        Discipline {
            name: "pie",
            summary: "PIE (RFC 8033) with Linux's arithmetic and derandomization",
            options: &[pie::LIMIT_OPTIONS, pie::SHARED_OPTIONS],
        },
        Discipline {
            name: "fq_pie",
            summary: "FQ-PIE (Linux sch_fq_pie): per-flow PIE queues served by DRR++",
            options: &[
                flow_queues::OPTIONS,
                fq_pie::OWN_OPTIONS,
                pie::SHARED_OPTIONS,
            ],
        },
        Discipline {
            name: "red",
            summary: "RED (Floyd & Jacobson 1993) with tc-red's options, gentle and adaptive RED",
            options: &[red::OPTIONS],
        },
        Discipline {
            name: "instant_red",
            summary: "the AQM evaluation thesis's stateless RED: instantaneous queue in packets, p = 1 above max, ECT marked even there (unlike red: no average, no count between marks)",
            options: &[instant_red::OPTIONS],
        },
        Discipline {
            name: "curvy_red",
            summary: "Curvy RED as the AQM evaluation thesis states it: p = min(1, (sojourn/dq)^curviness) at dequeue",
            options: &[curvy_red::OPTIONS],
        },
        Discipline {
            name: "dualq_uncoupled",
            summary: "the AQM evaluation thesis's uncoupled dual queue: ECT(1) FIFO and classic FIFO, each under its own stateless RED (Eq. 3.1 thresholds) or PIE (Linux's, not the thesis's Algorithm 1: 2% cap above 10%, drop ECT above 10%, 1/64 decay), WRR by flow counts",
            options: &[dualq::uncoupled::OPTIONS],
        },
        Discipline {
            name: "dualq_pi2",
            summary: "DualQ Coupled AQM with PI2 as draft-ietf-tsvwg-aqm-dualq-coupled-01's pseudo-code (the AQM evaluation thesis's l4s-pi2): p_C = p'^2, p_L = K p'. Unlike dualpi2 (RFC 9332, Linux): beta 1.6 per update (not 3.2), PI on the classic head's delay (not the older head), time-shifted FIFO (not WRR), step on delay AND L length, only ECT(1) in L, no 2-MTU floor or overload rule (p' clamped instead), floating point",
            options: &[dualq::pi2::OPTIONS],
        },
        Discipline {
            name: "dualq_cred",
            summary: "DualQ Coupled AQM with Curvy RED (the AQM evaluation thesis's l4s-cred): strict priority to L, p_C = (Q_C/2^S_C)^2, p_L = qd_C/2^S_L with the corrected S_L = S_C - log2 K",
            options: &[dualq::cred::OPTIONS],
        },
        Discipline {
            name: "dualq_pie",
            summary: "the AQM evaluation thesis's coupled dual queue on PIE (l4s-pie): PIE (Linux's arithmetic, as pie) on the classic delay gives p_C, p_L = sqrt(K p_C), all decided at enqueue, strict priority to L",
            options: &[dualq::pie::OPTIONS],
        },
        Discipline {
            name: "cake",
            summary:
                "Cake (sch_cake): shaper, diffserv tins, host/flow isolation, COBALT, SCE marking",
            options: &[cake::options::OPTIONS, cake::overhead::OPTIONS],
        },
        Discipline {
            name: "dualpi2",
            summary: "DualPI2 (RFC 9332, sch_dualpi2): coupled L4S/classic dual queue",
            options: &[dualpi2::OPTIONS],
        },
        Discipline {
            name: "twin_codel_af",
            summary: "SCE twin queue (sch_twin_codel_af): DSCP-4 low-latency class, sparse/bulk flow queues, COBALT with CoDel-scheduled SCE",
            options: &[sce_options::OPTIONS, cake::overhead::OPTIONS],
        },
        Discipline {
            name: "lfq_cobalt",
            summary: "SCE lightweight fair queueing (sch_lfq_cobalt): sparse and scanned bulk queue, COBALT with CoDel-scheduled SCE",
            options: &[
                sce_options::OPTIONS,
                sce_options::MEMORY_OPTIONS,
                cake::overhead::OPTIONS,
            ],
        },
    ]
}

/// The names of all disciplines, for error messages.
pub(crate) fn names() -> String {
    catalogue()
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The options of the discipline `name`, in groups (none for a name the
/// catalogue does not know).
pub(crate) fn options_of(name: &str) -> &'static [&'static [Opt]] {
    catalogue()
        .iter()
        .find(|d| d.name == name)
        .map_or(&[], |d| d.options)
}
