//! Link-layer compensation for cake's shaper (cake_calc_overhead): what a
//! packet really costs on the wire below IP. emu's packets are IP packets,
//! so `raw` (no compensation) counts IP bytes and `overhead N` adds N.

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
}

impl Default for Overhead {
    fn default() -> Self {
        Overhead {
            overhead: 0,
            mpu: 0,
            framing: Framing::None,
        }
    }
}

impl Overhead {
    /// The bytes the shaper charges for a packet of `len` IP bytes.
    pub fn adjusted(&self, len: u32) -> u32 {
        let mut len = (len as i64 + self.overhead as i64).max(0) as u32;
        len = len.max(self.mpu);
        match self.framing {
            Framing::None => len,
            Framing::Atm => len.div_ceil(48) * 53,
            Framing::Ptm => len + len.div_ceil(64),
        }
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
        assert_eq!(atm.adjusted(100), 159);
        assert_eq!(atm.adjusted(96), 106);
        let pppoe = Overhead {
            overhead: 32,
            framing: Framing::Atm,
            mpu: 0,
        };
        assert_eq!(pppoe.adjusted(1500), 1532u32.div_ceil(48) * 53);
    }

    #[test]
    fn ptm_adds_a_byte_per_64_and_mpu_pads_small_frames() {
        let ptm = Overhead {
            framing: Framing::Ptm,
            ..Overhead::default()
        };
        assert_eq!(ptm.adjusted(1500), 1500 + 24);
        assert_eq!(ptm.adjusted(64), 65);
        let ethernet = Overhead {
            overhead: 38,
            mpu: 84,
            framing: Framing::None,
        };
        assert_eq!(ethernet.adjusted(40), 84);
        assert_eq!(ethernet.adjusted(1500), 1538);
    }
}
