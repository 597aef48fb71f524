//! Between a TUN device and the wire: one read becomes the packets a wire
//! would carry, and packets that are due go back out, merged where the
//! device takes super-packets. The shells' pumps and the experiments'
//! fabric both move packets this way, so both cut and merge alike.

use crate::tun::{write_packet, write_raw};
use emu_core::offload::{continues_run, merge_run, segment, MAX_MERGED, VNET_HDR_LEN};
use emu_core::time::Nanos;
use emu_core::Packet;
use std::os::fd::RawFd;

/// Largest read a TUN device can hand us: a 64 KiB super-packet and its
/// virtio-net header.
pub const READ_BUFFER: usize = 65_536 + VNET_HDR_LEN;
/// Room for the largest merged write (see [`write_due`]).
pub const MERGED_BUFFER: usize = MAX_MERGED + VNET_HDR_LEN;

/// Appends to `out` the packets of one read from a device, all stamped
/// `now`. The read starts with a virtio-net header and, where the device
/// offloads, may hold a TCP or UDP super-packet, which is cut into the packets
/// the wire would carry (`segments` is scratch space for the cut). A read
/// that cannot be cut goes on whole (without its header), to be dropped and
/// logged as oversize by the link rather than vanish.
pub fn split_read(read: &[u8], now: Nanos, segments: &mut Vec<Vec<u8>>, out: &mut Vec<Packet>) {
    segments.clear();
    if segment(read, segments).is_err() {
        segments.clear();
        segments.push(read[VNET_HDR_LEN.min(read.len())..].to_vec());
    }
    out.extend(segments.drain(..).map(|data| Packet::new(data, now)));
}

/// Writes the packets that are due, in order; returns how many writes the
/// kernel refused. Consecutive segments of one TCP flow that are all due
/// go out as one GSO packet (what GRO would make of them on a real
/// receiver), so a pump that is behind catches up with one system call,
/// and one pass through the receiver's stack, instead of dozens. This holds
/// with or without offload on reads: without it, only the kernel's
/// segmentation before emu reads changes. Nothing is written before its
/// time: only packets already due are merged. Each packet's lateness is
/// taken as its write starts and handed to `record_lateness`.
pub fn write_due(
    fd: RawFd,
    due: &[(Packet, Nanos)],
    merged: &mut Vec<u8>,
    mut record_lateness: impl FnMut(Nanos),
) -> u64 {
    let mut errors = 0;
    let mut start = 0;
    while start < due.len() {
        let first = &due[start].0.data;
        let mut end = start + 1;
        let mut size = first.len();
        while end < due.len()
            && size + due[end].0.len() <= MAX_MERGED
            && continues_run(first, &due[end - 1].0.data, &due[end].0.data)
        {
            size += due[end].0.len();
            end += 1;
        }
        let now = emu_core::time::monotonic_now();
        for (_, due_at) in &due[start..end] {
            record_lateness(now.saturating_sub(*due_at));
        }
        let written = if end - start == 1 {
            write_packet(fd, first)
        } else {
            merge_run(
                due[start..end].iter().map(|(p, _)| p.data.as_slice()),
                merged,
            );
            write_raw(fd, merged)
        };
        if written.is_err() {
            errors += (end - start) as u64;
        }
        start = end;
    }
    errors
}
