//! Cake's priority tins: which DSCP goes to which tin, and each tin's
//! share of the bandwidth (sch_cake.c, cake_config_*; Piece of CAKE §3.3).

use super::cobalt::CobaltParams;
use emu_core::Nanos;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TinMode {
    Besteffort,
    Precedence,
    Diffserv8,
    Diffserv4,
    Diffserv3,
}

impl TinMode {
    pub fn name(self) -> &'static str {
        match self {
            TinMode::Besteffort => "besteffort",
            TinMode::Precedence => "precedence",
            TinMode::Diffserv8 => "diffserv8",
            TinMode::Diffserv4 => "diffserv4",
            TinMode::Diffserv3 => "diffserv3",
        }
    }

    /// The tin of each of the 64 DSCPs.
    pub fn index(self) -> &'static [u8; 64] {
        match self {
            TinMode::Besteffort => &[0; 64],
            TinMode::Precedence => &PRECEDENCE,
            TinMode::Diffserv8 => &DIFFSERV8,
            TinMode::Diffserv4 => &DIFFSERV4,
            TinMode::Diffserv3 => &DIFFSERV3,
        }
    }
}

/// The IP precedence (top three bits of DSCP).
const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i >> 3) as u8;
        i += 1;
    }
    t
};

/// Network control (CS6, CS7) 7; minimum latency (EF, VA, CS5, CS4) 6;
/// interactive shell (CS2) 5; low-latency transactions (AF2x, TOS4) 4;
/// video (AF4x, AF3x, CS3) 3; best effort 2; high throughput (AF1x, TOS2,
/// CS1) 1; background (LE) 0.
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2, 7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];

/// Latency sensitive (CS7, CS6, EF, VA, CS5, CS4) 3; streaming (AF4x,
/// AF3x, CS3, AF2x, TOS4, CS2) 2; best effort 0; background (LE, CS1) 1.
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];

/// Latency sensitive (CS7, CS6, EF, VA, TOS4) 2; best effort 0; low
/// priority (LE, CS1) 1.
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];

/// One tin's shaping and scheduling figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TinConfig {
    /// Bytes per second this tin may use before it loses priority.
    pub rate: u64,
    /// ns per byte in fixed point: time = (len · rate_ns) >> rate_shift.
    pub rate_ns: u64,
    pub rate_shift: u32,
    /// Per-flow DRR quantum: rate/4096 clamped to 300..=1514 when shaped.
    pub flow_quantum: u32,
    /// Weight among tins when unshaped.
    pub tin_quantum: u32,
    pub cobalt: CobaltParams,
}

/// A shaper rate of `rate` bytes/s (0 = unlimited) as ns per byte in
/// fixed point, (rate_ns, rate_shift), so that a packet of `len` bytes
/// takes (len · rate_ns) >> rate_shift ns; rates below 64 B/s count as 64.
pub fn shaper_rate(rate: u64) -> (u64, u32) {
    const MIN_RATE: u64 = 64;
    if rate == 0 {
        return (0, 0);
    }
    let mut rate_shift = 34;
    let mut rate_ns = ((1_000_000_000u128 << rate_shift) / rate.max(MIN_RATE) as u128) as u64;
    while rate_ns >> 34 != 0 {
        rate_ns >>= 1;
        rate_shift -= 1;
    }
    (rate_ns, rate_shift)
}

/// cake_set_rate: the tin's byte time, and COBALT's target raised to at
/// least 1.5 MTU times (so slow links are not starved) with the interval
/// raised by as much.
pub fn tin_config(
    rate: u64,
    mtu: u32,
    target: Nanos,
    interval: Nanos,
    sce_divisor: u32,
) -> TinConfig {
    let (rate_ns, rate_shift) = shaper_rate(rate);
    let flow_quantum = if rate > 0 {
        (rate >> 12).clamp(300, 1514) as u32
    } else {
        1514
    };
    let mtu_time = (mtu as u64 * rate_ns) >> rate_shift;
    let cake_target = (mtu_time * 3 / 2).max(target);
    let mut cobalt = CobaltParams {
        target: cake_target,
        interval: (interval + cake_target - target).max(cake_target * 2),
        mtu_time,
        p_inc: 1 << 24,
        p_dec: 1 << 20,
        ..CobaltParams::default()
    };
    cobalt.set_sce_ramp(sce_divisor);
    TinConfig {
        rate,
        rate_ns,
        rate_shift,
        flow_quantum,
        tin_quantum: 0,
        cobalt,
    }
}

/// Every tin of a mode (cake_config_*): rates in bytes per second.
pub fn configure(
    mode: TinMode,
    rate: u64,
    mtu: u32,
    target: Nanos,
    interval: Nanos,
    sce: u32,
) -> Vec<TinConfig> {
    let tin = |rate: u64, quantum: u32| TinConfig {
        tin_quantum: quantum.max(1),
        ..tin_config(rate, mtu, target, interval, sce)
    };
    match mode {
        TinMode::Besteffort => vec![tin(rate, 65_535)],
        TinMode::Precedence | TinMode::Diffserv8 => {
            // Each class 7/8 of the one above in rate and weight.
            let (mut rate, mut quantum) = (rate, 256u32);
            (0..8)
                .map(|_| {
                    let t = tin(rate, quantum);
                    rate = (rate * 7) >> 3;
                    quantum = (quantum * 7) >> 3;
                    t
                })
                .collect()
        }
        TinMode::Diffserv4 => vec![
            tin(rate, 1024),
            tin(rate >> 4, 1024 >> 4),
            tin(rate >> 1, 1024 >> 1),
            tin(rate >> 2, 1024 >> 2),
        ],
        TinMode::Diffserv3 => vec![
            tin(rate, 1024),
            tin(rate >> 4, 1024 >> 4),
            tin(rate >> 2, 1024 >> 2),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscps_land_in_their_tins() {
        // diffserv3: EF (46) and CS6 (48) latency sensitive, CS1 (8) and
        // LE (1) bulk, AF11 (10) and DF best effort.
        let d3 = TinMode::Diffserv3.index();
        assert_eq!(
            [d3[46], d3[48], d3[8], d3[1], d3[10], d3[0]],
            [2, 2, 1, 1, 0, 0]
        );
        // diffserv4: AF41 (34) streaming, CS5 (40) latency sensitive.
        let d4 = TinMode::Diffserv4.index();
        assert_eq!([d4[34], d4[40], d4[8], d4[0]], [2, 3, 1, 0]);
        // diffserv8: CS7 (56) network control, EF voice, CS2 (16) shell,
        // AF21 (18) low latency, AF31 (26) video, AF11 bulk, LE background.
        let d8 = TinMode::Diffserv8.index();
        assert_eq!(
            [d8[56], d8[46], d8[16], d8[18], d8[26], d8[0], d8[10], d8[1]],
            [7, 6, 5, 4, 3, 2, 1, 0]
        );
        assert_eq!(TinMode::Precedence.index()[46], 5);
    }

    #[test]
    fn quantum_and_target_scale_with_the_rate() {
        // 10 Mbit/s = 1.25 MB/s: quantum 1.25e6/4096 = 305 bytes; one MTU
        // takes 1.2 ms, so the target stays 5 ms.
        let t = tin_config(1_250_000, 1500, 5_000_000, 100_000_000, 0);
        assert_eq!(t.flow_quantum, 305);
        assert!((t.cobalt.mtu_time as i64 - 1_200_000).abs() < 10);
        assert_eq!(t.cobalt.target, 5_000_000);
        // 1 Mbit/s: an MTU takes 12 ms, so the target rises to 18 ms and
        // the interval by as much.
        let slow = tin_config(125_000, 1500, 5_000_000, 100_000_000, 0);
        assert_eq!(slow.flow_quantum, 300);
        assert!((slow.cobalt.target as i64 - 18_000_000).abs() < 100);
        assert!((slow.cobalt.interval as i64 - 113_000_000).abs() < 100);
    }

    #[test]
    fn diffserv4_shares() {
        let tins = configure(
            TinMode::Diffserv4,
            1_000_000,
            1500,
            5_000_000,
            100_000_000,
            0,
        );
        let rates: Vec<u64> = tins.iter().map(|t| t.rate).collect();
        assert_eq!(rates, vec![1_000_000, 62_500, 500_000, 250_000]);
    }
}
