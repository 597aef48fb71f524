//! Packet captures people open in Wireshark: per shell and direction, a
//! pcapng file of the packets that left the link (and, if asked, a second
//! one of those it dropped: one interface per file, as tcpdump reads only
//! files whose interfaces agree), IP headers first (link type RAW), nanosecond timestamps
//! (`if_tsresol` 9) on the wall clock, and what emu knows about each packet
//! (sojourn, drop reason, the ECN mark this shell made) as its comment.
//!
//! Captures travel like log records: the pump copies the packet's first
//! bytes into a [`Captured`] and pushes it on a ring without blocking; the
//! log writer thread turns it into a pcapng block. The file format itself is
//! written by the `pcap-file` crate.

use crate::log::record::{DropReason, Mark};
use crate::output::{Encode, Routed};
use crate::time::Nanos;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness};
use std::borrow::Cow;
use std::io;
use std::time::Duration;

/// Bytes kept of each packet by default: every IPv4/IPv6 and TCP header
/// with options, and no payload.
pub const DEFAULT_SNAPLEN: u32 = 128;

/// What to capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureOptions {
    /// Bytes kept of each packet (the rest is cut off; its length is kept).
    pub snaplen: u32,
    /// Also capture dropped packets, into a file of their own.
    pub drops: bool,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            snaplen: DEFAULT_SNAPLEN,
            drops: false,
        }
    }
}

/// What became of a captured packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Left the link, after `sojourn` in this shell's queue; `mark` if this
    /// shell's queue set its ECN field.
    Departed { sojourn: Nanos, mark: Option<Mark> },
    /// Dropped by this shell for `reason` after `sojourn` in its queue.
    Dropped {
        reason: DropReason,
        sojourn: Nanos,
        mark: Option<Mark>,
    },
}

impl Fate {
    /// The packet comment Wireshark shows (`frame.comment`).
    pub fn comment(&self) -> String {
        let (mut text, sojourn, mark) = match *self {
            Fate::Departed { sojourn, mark } => ("departed".to_string(), sojourn, mark),
            Fate::Dropped {
                reason,
                sojourn,
                mark,
            } => (format!("dropped: {}", reason.name()), sojourn, mark),
        };
        text += &format!(
            "; sojourn {}.{:06} ms",
            sojourn / 1_000_000,
            sojourn % 1_000_000
        );
        if let Some(mark) = mark {
            text += &format!(
                "; marked {} here",
                match mark {
                    Mark::Ce => "CE",
                    Mark::Ect1 => "ECT(1)",
                }
            );
        }
        text
    }
}

/// One captured packet on its way to the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// CLOCK_MONOTONIC (as in the log) of the departure or drop.
    pub time: Nanos,
    /// The packet's length on the link.
    pub original_len: u32,
    /// Its first `snaplen` bytes.
    pub data: Vec<u8>,
    pub fate: Fate,
}

/// What a capture file says about its shell and direction.
pub struct CaptureHeader {
    /// The interface's name, e.g. `emu1 uplink` or `emu1 uplink drops`.
    pub name: String,
    /// The shell as the user gave it, e.g. `link 10mbit`.
    pub description: String,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME read together, to put packet
    /// times on the wall clock.
    pub monotonic_origin_ns: u64,
    pub realtime_origin_ns: u64,
    pub options: CaptureOptions,
}

/// Encodes the blocks of one pcapng file: its section header and one
/// interface first ([`CaptureEncoder::new`]), then a packet block per
/// captured packet. The log writer's output stream puts the bytes on disk.
pub struct CaptureEncoder {
    /// Writes into its own buffer, which each encoding empties.
    writer: PcapNgWriter<Vec<u8>>,
    /// Added to a monotonic time to give nanoseconds since the epoch.
    realtime_offset: i128,
}

impl CaptureEncoder {
    /// The encoder, and the bytes that start the file: its section header
    /// and its one interface.
    pub fn new(header: &CaptureHeader) -> io::Result<(CaptureEncoder, Vec<u8>)> {
        let section = SectionHeaderBlock {
            endianness: if cfg!(target_endian = "big") {
                Endianness::Big
            } else {
                Endianness::Little
            },
            options: vec![SectionHeaderOption::UserApplication(Cow::Owned(format!(
                "emu {}",
                env!("CARGO_PKG_VERSION")
            )))],
            ..Default::default()
        };
        let mut writer = PcapNgWriter::with_section_header(Vec::new(), section).map_err(to_io)?;
        let interface = InterfaceDescriptionBlock {
            linktype: DataLink::RAW,
            snaplen: header.options.snaplen,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(header.name.clone())),
                InterfaceDescriptionOption::IfDescription(Cow::Owned(header.description.clone())),
                // 10^-9 s: nanoseconds, as every emu time.
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        writer.write_pcapng_block(interface).map_err(to_io)?;
        let start = std::mem::take(writer.get_mut());
        Ok((
            CaptureEncoder {
                writer,
                realtime_offset: header.realtime_origin_ns as i128
                    - header.monotonic_origin_ns as i128,
            },
            start,
        ))
    }
}

impl Encode<Captured> for CaptureEncoder {
    fn encode(&mut self, packet: &Captured, out: &mut Vec<u8>) -> io::Result<()> {
        let epoch_ns = (packet.time as i128 + self.realtime_offset).max(0) as u64;
        let block = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(epoch_ns),
            original_len: packet.original_len,
            data: Cow::Borrowed(&packet.data),
            options: vec![EnhancedPacketOption::Comment(Cow::Owned(
                packet.fate.comment(),
            ))],
        };
        self.writer.write_pcapng_block(block).map_err(to_io)?;
        out.append(self.writer.get_mut());
        Ok(())
    }
}

/// A packet's departures go to slot 0 of its ring, its drops to slot 1.
impl Routed for Captured {
    fn slot(&self) -> usize {
        match self.fate {
            Fate::Departed { .. } => 0,
            Fate::Dropped { .. } => 1,
        }
    }
}

fn to_io(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use std::fs::File;

    #[test]
    fn comments_say_what_happened() {
        let departed = Fate::Departed {
            sojourn: 1_234_567,
            mark: Some(Mark::Ce),
        };
        assert_eq!(
            departed.comment(),
            "departed; sojourn 1.234567 ms; marked CE here"
        );
        let dropped = Fate::Dropped {
            reason: DropReason::Aqm,
            sojourn: 20_000_001,
            mark: None,
        };
        assert_eq!(dropped.comment(), "dropped: aqm; sojourn 20.000001 ms");
    }

    /// The file reads back with its interfaces, nanosecond wall-clock
    /// times, cut packets and comments.
    #[test]
    fn a_capture_reads_back_block_by_block() {
        let path = std::env::temp_dir().join(format!("emu-capture-{}.pcapng", std::process::id()));
        let header = CaptureHeader {
            name: "emu0 uplink".into(),
            description: "link 10mbit".into(),
            monotonic_origin_ns: 1_000,
            realtime_origin_ns: 1_700_000_000_000_000_000,
            options: CaptureOptions {
                snaplen: 4,
                drops: true,
            },
        };
        let (mut encoder, mut bytes) = CaptureEncoder::new(&header).unwrap();
        let packet = |time, fate| Captured {
            time,
            original_len: 1500,
            data: vec![0x45, 0, 5, 0xdc],
            fate,
        };
        let departed = packet(
            1_500,
            Fate::Departed {
                sojourn: 7,
                mark: None,
            },
        );
        let dropped = packet(
            2_001,
            Fate::Dropped {
                reason: DropReason::Tail,
                sojourn: 0,
                mark: None,
            },
        );
        assert_eq!((departed.slot(), dropped.slot()), (0, 1));
        encoder.encode(&departed, &mut bytes).unwrap();
        encoder.encode(&dropped, &mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();

        let mut reader = PcapNgReader::new(File::open(&path).unwrap()).unwrap();
        let mut interfaces = Vec::new();
        let mut packets = Vec::new();
        while let Some(block) = reader.next_block() {
            match block.unwrap() {
                Block::InterfaceDescription(i) => interfaces.push(i.into_owned()),
                Block::EnhancedPacket(p) => packets.push(p.into_owned()),
                _ => {}
            }
        }
        assert_eq!(interfaces.len(), 1);
        assert_eq!(interfaces[0].linktype, DataLink::RAW);
        assert!(interfaces[0]
            .options
            .contains(&InterfaceDescriptionOption::IfTsResol(9)));
        assert_eq!(packets.len(), 2);
        assert_eq!(
            packets[0].timestamp,
            Duration::from_nanos(1_700_000_000_000_000_500)
        );
        assert_eq!(packets[0].interface_id, 0);
        assert_eq!(packets[0].original_len, 1500);
        assert_eq!(packets[0].data.len(), 4);
        assert_eq!(
            packets[1].options,
            vec![EnhancedPacketOption::Comment(
                "dropped: tail; sojourn 0.000000 ms".into()
            )]
        );
        std::fs::remove_file(&path).unwrap();
    }
}
