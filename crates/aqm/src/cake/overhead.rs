//! Link-layer compensation for cake's shaper, as the kernel computes it
//! (net/sched/sch_cake.c, cake_calc_overhead): what a packet really costs
//! on the wire below IP.
//!
//! The kernel starts from the length the qdisc was given, which on an
//! Ethernet device includes the 14-byte MAC header (see [`emu_core::size`]:
//! emu's frame length with `--l2 ethernet`). Without an `overhead` keyword
//! (and with `raw`) that length is charged as it is; `overhead N` and
//! every named link type first strip the header (the network offset) and
//! then add N. So on Ethernet plain `cake` charges IP + 14, `cake overhead
//! 0` charges IP, and `cake ethernet` charges max(IP + 38, 84). With the
//! default `--l2 none` the header is 0 and all of them start from IP bytes.

use crate::grammar::{Opt, SpecError, Words};
use emu_core::size::parse_count;
use serde::{Deserialize, Serialize};

/// Cell framing of the link below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Framing {
    None,
    /// ATM: 48 payload bytes per 53-byte cell, the last cell padded.
    Atm,
    /// PTM (VDSL2): 64/65 encoding, one byte per 64 or part of it.
    Ptm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    pub overhead: i32,
    pub mpu: u32,
    pub framing: Framing,
    /// An overhead was given (`overhead N` or a named link type, the
    /// kernel's CAKE_FLAG_OVERHEAD): the link-layer header is taken off
    /// before `overhead` is added. False by default and after `raw`.
    #[serde(default)]
    pub compensated: bool,
}

impl Default for Overhead {
    fn default() -> Self {
        Overhead {
            overhead: 0,
            mpu: 0,
            framing: Framing::None,
            compensated: false,
        }
    }
}

impl Overhead {
    /// The bytes the shaper charges for a frame of `frame_len` bytes whose
    /// IP packet starts `network_offset` bytes in (the link-layer header).
    pub fn adjusted(&self, frame_len: u32, network_offset: u32) -> u32 {
        let mut len = frame_len as i64;
        if self.compensated {
            len -= network_offset as i64;
        }
        let mut len = (len + self.overhead as i64).max(0) as u32;
        len = len.max(self.mpu);
        match self.framing {
            Framing::None => len,
            Framing::Atm => len.div_ceil(48) * 53,
            Framing::Ptm => len + len.div_ceil(64),
        }
    }

    /// The compensation as tc-cake prints it: ` [raw] overhead N mpu M
    /// [atm|ptm]`.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        if !self.compensated {
            text += " raw";
        }
        text += &format!(" overhead {} mpu {}", self.overhead, self.mpu);
        text += match self.framing {
            Framing::None => "",
            Framing::Atm => " atm",
            Framing::Ptm => " ptm",
        };
        text
    }

    /// tc-cake's named link types: (keyword, overhead, framing, mpu).
    pub const PRESETS: &'static [(&'static str, i32, Framing, Option<u32>)] = &[
        ("conservative", 48, Framing::Atm, None),
        ("ethernet", 38, Framing::None, Some(84)),
        ("docsis", 18, Framing::None, Some(64)),
        ("pppoe-ptm", 30, Framing::Ptm, None),
        ("bridged-ptm", 22, Framing::Ptm, None),
        ("pppoa-vcmux", 10, Framing::Atm, None),
        ("pppoa-llc", 14, Framing::Atm, None),
        ("pppoe-vcmux", 32, Framing::Atm, None),
        ("pppoe-llcsnap", 40, Framing::Atm, None),
        ("bridged-vcmux", 24, Framing::Atm, None),
        ("bridged-llcsnap", 32, Framing::Atm, None),
        ("ipoa-vcmux", 8, Framing::Atm, None),
        ("ipoa-llcsnap", 16, Framing::Atm, None),
    ];
}

/// The link-compensation options of cake and the queues that share its
/// shaper, for `emu queues`.
pub(crate) const OPTIONS: &[Opt] = &[
    ("overhead", "BYTES", "none", "charge IP bytes + BYTES (the L2 header is taken off first, as the kernel does)"),
    ("mpu", "BYTES", "0", "smallest frame the link sends"),
    ("atm | ptm | noatm", "", "noatm", "cell framing of the link below"),
    ("raw", "", "raw", "no compensation: charge the frame as the qdisc gets it (IP, + 14 with link --l2 ethernet)"),
    ("conservative | ethernet | docsis | pppoe-ptm | bridged-ptm | pppoa-vcmux | pppoa-llc | pppoe-vcmux | pppoe-llcsnap | bridged-vcmux | bridged-llcsnap | ipoa-vcmux | ipoa-llcsnap | ether-vlan", "", "", "tc-cake's link presets"),
];

/// tc-cake's link-compensation keywords (`overhead`, `mpu`, `atm`, `ptm`,
/// `noatm`, `raw`, `ether-vlan` and the named link types), read one at a
/// time into an [`Overhead`]; shared by every discipline that takes them.
#[derive(Debug, Default)]
pub(crate) struct OverheadWords {
    overhead: Overhead,
    /// An overhead was given (the kernel's CAKE_FLAG_OVERHEAD)...
    set: bool,
    /// ...unless `raw` cleared it again.
    raw: bool,
}

impl OverheadWords {
    /// Reads `keyword` (and its value) if it is a link keyword; false if
    /// it is not one, so the caller tries its own.
    pub(crate) fn take(&mut self, keyword: &str, words: &mut Words) -> Result<bool, SpecError> {
        let o = &mut self.overhead;
        if let Some((_, overhead, framing, mpu)) =
            Overhead::PRESETS.iter().find(|(k, ..)| *k == keyword)
        {
            o.overhead += *overhead;
            o.framing = *framing;
            if let Some(mpu) = mpu {
                o.mpu = *mpu;
            }
            self.set = true;
            return Ok(true);
        }
        match keyword {
            "overhead" => {
                o.overhead = words.value(keyword, |v| match v.parse::<i32>() {
                    Ok(n) if (-64..=256).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "'{v}' is not an overhead: expected bytes from -64 to 256"
                    )),
                })?;
                self.set = true;
            }
            "mpu" => o.mpu = words.value(keyword, parse_count)?.min(256) as u32,
            "atm" => o.framing = Framing::Atm,
            "ptm" => o.framing = Framing::Ptm,
            "noatm" => o.framing = Framing::None,
            "raw" => {
                o.overhead = 0;
                o.framing = Framing::None;
                self.raw = true;
            }
            "ether-vlan" => {
                o.overhead += 4;
                self.set = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The compensation the keywords asked for.
    pub(crate) fn finish(self) -> Overhead {
        Overhead {
            compensated: self.set && !self.raw,
            ..self.overhead
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atm_pads_to_whole_cells() {
        let atm = Overhead {
            framing: Framing::Atm,
            ..Overhead::default()
        };
        // REFERENCES.md: ceil(100/48)·53 = 159.
        assert_eq!(atm.adjusted(100, 0), 159);
        assert_eq!(atm.adjusted(96, 0), 106);
        let pppoe = Overhead {
            overhead: 32,
            framing: Framing::Atm,
            mpu: 0,
            compensated: true,
        };
        assert_eq!(pppoe.adjusted(1500, 0), 1532u32.div_ceil(48) * 53);
    }

    #[test]
    fn ptm_adds_a_byte_per_64_and_mpu_pads_small_frames() {
        let ptm = Overhead {
            framing: Framing::Ptm,
            ..Overhead::default()
        };
        assert_eq!(ptm.adjusted(1500, 0), 1500 + 24);
        assert_eq!(ptm.adjusted(64, 0), 65);
        let ethernet = Overhead {
            overhead: 38,
            mpu: 84,
            framing: Framing::None,
            compensated: true,
        };
        assert_eq!(ethernet.adjusted(40, 0), 84);
        assert_eq!(ethernet.adjusted(1500, 0), 1538);
    }
}
