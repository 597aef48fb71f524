//! Between a TUN device and the wire: one read becomes the packets a wire
//! would carry, and packets that are due go back out, merged where the
//! device takes super-packets. The shells' pumps and the experiments'
//! fabric both move packets this way, so both cut and merge alike.

use crate::sys::tun::{read_scattered, write_gathered, write_packet, MAX_PARTS};
use emu_core::offload::{
    continues_run, finish_plain, merged_headers, segment, VnetHeader, MAX_MERGED, VNET_HDR_LEN,
};
use emu_core::time::Nanos;
use emu_core::Packet;
use std::io;
use std::os::fd::RawFd;

/// Largest read a TUN device can hand us: a 64 KiB super-packet and its
/// virtio-net header.
pub const READ_BUFFER: usize = 65_536 + VNET_HDR_LEN;
/// Room for the headers of a merged write (see [`write_due`]): the
/// virtio-net header, IPv6 and TCP with the most options.
pub const MERGED_HEADERS: usize = VNET_HDR_LEN + 40 + 60;

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

/// Room for one plain packet of the usual MTUs, read in place.
const PLAIN: usize = 2048;
/// Plain packets this short (acknowledgements) are copied out of the
/// buffer they were read into: holding 2 KiB for each in a queue would
/// cost more than the copy.
const SHORT: usize = 256;

/// Reads from one device at a time and turns each read into packets.
///
/// Why not read into one buffer and copy each packet out: a plain packet
/// (every packet without offload, and most UDP) would then be copied once
/// more than needed: 4% of emu's CPU samples with 34,000 UDP datagrams
/// a second through `delay 0` (`perf record`), none with the read
/// scattered. So each read is scattered: the virtio-net header into the
/// start of `whole`, then up to [`PLAIN`] bytes straight into the buffer
/// the next packet will own, then the rest of `whole`. A plain packet
/// goes on in the buffer it was read into; a super-packet (or a plain
/// packet larger than [`PLAIN`]) has its first part copied back into
/// `whole`, which makes the read contiguous again, and is cut as before.
pub struct Reception {
    /// The header, room for [`PLAIN`] bytes, then the rest of a read.
    whole: Vec<u8>,
    /// Where the next packet's first [`PLAIN`] bytes land (empty, with
    /// that capacity, until a read fills it).
    plain: Vec<u8>,
    /// Scratch space for cutting super-packets.
    segments: Vec<Vec<u8>>,
    /// Bytes of the last read.
    read: usize,
}

impl Default for Reception {
    fn default() -> Reception {
        Reception {
            whole: vec![0u8; READ_BUFFER + PLAIN],
            plain: Vec::with_capacity(PLAIN),
            segments: Vec::with_capacity(64),
            read: 0,
        }
    }
}

impl Reception {
    /// Reads once from `fd`: how many bytes (0 for an empty read);
    /// `WouldBlock` when nothing is waiting.
    pub fn read(&mut self, fd: RawFd) -> io::Result<usize> {
        self.plain.clear();
        let (header, rest) = self.whole.split_at_mut(VNET_HDR_LEN);
        let parts = [
            libc::iovec {
                iov_base: header.as_mut_ptr().cast(),
                iov_len: header.len(),
            },
            libc::iovec {
                iov_base: self.plain.as_mut_ptr().cast(),
                iov_len: PLAIN,
            },
            libc::iovec {
                iov_base: rest[PLAIN..].as_mut_ptr().cast(),
                iov_len: rest.len() - PLAIN,
            },
        ];
        // SAFETY: the header and the rest are slices of `whole`, and
        // `plain` has PLAIN bytes of capacity; none moves during the read.
        let n = unsafe { read_scattered(fd, &parts)? };
        // SAFETY: the kernel wrote this many bytes into `plain`.
        unsafe {
            self.plain
                .set_len(n.saturating_sub(VNET_HDR_LEN).min(PLAIN));
        }
        self.read = n;
        Ok(n)
    }

    /// Appends to `out` the packets of the last read, all stamped `now`
    /// (see [`split_read`]).
    pub fn split(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let n = self.read;
        let header = VnetHeader::parse(&self.whole[..VNET_HDR_LEN]);
        let in_place = n > VNET_HDR_LEN && n - VNET_HDR_LEN <= PLAIN;
        if let Some(header) = header.filter(|h| in_place && h.is_plain()) {
            let mut data = if self.plain.len() <= SHORT {
                self.plain.clone()
            } else {
                std::mem::replace(&mut self.plain, Vec::with_capacity(PLAIN))
            };
            // A checksum field beyond the packet leaves it as read, to be
            // dropped and logged by the link, as `split_read` does.
            let _ = finish_plain(&header, &mut data);
            out.push(Packet::new(data, now));
            return;
        }
        let first = self.plain.len();
        self.whole[VNET_HDR_LEN..VNET_HDR_LEN + first].copy_from_slice(&self.plain);
        split_read(&self.whole[..n], now, &mut self.segments, out);
    }
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
    headers: &mut Vec<u8>,
    mut record_lateness: impl FnMut(Nanos),
) -> u64 {
    let mut errors = 0;
    let mut start = 0;
    while start < due.len() {
        let first = &due[start].0.data;
        let mut end = start + 1;
        let mut size = first.len();
        while end < due.len()
            && end - start < MAX_PARTS - 1
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
            write_run(fd, &due[start..end], size, headers)
        };
        if written.is_err() {
            errors += (end - start) as u64;
        }
        start = end;
    }
    errors
}

/// Writes a run of segments that `continues_run` accepted as one GSO
/// packet, `bytes` long together: its headers (built in `headers`), then
/// each segment's payload where it lies, in one gathering write. Copying the payloads into one
/// buffer first was a tenth of the experiments' fabric's samples at
/// 10 Gbit/s (`memmove`).
fn write_run(
    fd: RawFd,
    run: &[(Packet, Nanos)],
    bytes: usize,
    headers: &mut Vec<u8>,
) -> io::Result<()> {
    let (Some((first, _)), Some((last, _))) = (run.first(), run.last()) else {
        return Ok(());
    };
    let Some(header_len) = merged_headers(&first.data, &last.data, run.len(), bytes, headers)
    else {
        // Not a run continues_run would have made: each on its own.
        return run.iter().try_for_each(|(p, _)| write_packet(fd, &p.data));
    };
    let payloads = run.iter().map(|(p, _)| &p.data[header_len..]);
    write_gathered(fd, std::iter::once(headers.as_slice()).chain(payloads))
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::offload::fixtures::{plain_read, tcp_v4, tso_read};

    /// Each read as a device gives it, one message per packet, through a
    /// socket pair that keeps message boundaries.
    fn received(reads: &[Vec<u8>]) -> Vec<Vec<Packet>> {
        let mut fds = [0; 2];
        // SAFETY: creating a socket pair we own and close below.
        let made =
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
        assert_eq!(made, 0);
        let mut reception = Reception::default();
        let mut all = Vec::new();
        for read in reads {
            // SAFETY: writing a buffer we own to our socket.
            let sent = unsafe { libc::write(fds[1], read.as_ptr().cast(), read.len()) };
            assert_eq!(sent, read.len() as isize);
            let n = reception.read(fds[0]).unwrap();
            assert_eq!(n, read.len());
            let mut packets = Vec::new();
            reception.split(7, &mut packets);
            all.push(packets);
        }
        // SAFETY: closing the descriptors made above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        all
    }

    /// Whatever the read (an acknowledgement, a full-sized packet, one
    /// larger than the in-place buffer, a super-packet, one too short to
    /// hold a header), the packets are those of cutting the read as one
    /// contiguous buffer: the scattered read changes where bytes land, not
    /// what comes out.
    #[test]
    fn a_scattered_read_gives_the_packets_of_a_contiguous_one() {
        const ACK_PSH: u8 = 0x18;
        let reads = [
            plain_read(&tcp_v4(12, ACK_PSH)),
            plain_read(&tcp_v4(1448, ACK_PSH)),
            plain_read(&tcp_v4(PLAIN + 500, ACK_PSH)),
            tso_read(1448, &tcp_v4(1448 * 3 + 100, ACK_PSH)),
            plain_read(&tcp_v4(1448, ACK_PSH)),
            vec![0u8; 4],
        ];
        let got = received(&reads);
        for (read, packets) in reads.iter().zip(&got) {
            let (mut segments, mut expected) = (Vec::new(), Vec::new());
            split_read(read, 7, &mut segments, &mut expected);
            let data = |ps: &[Packet]| ps.iter().map(|p| p.data.clone()).collect::<Vec<_>>();
            assert_eq!(
                data(packets),
                data(&expected),
                "read of {} bytes",
                read.len()
            );
            assert!(packets.iter().all(|p| p.arrival == 7));
        }
        assert_eq!(got[3].len(), 4, "the super-packet is cut");
        // The checksum was completed (the partial sum replaced) in place.
        assert_ne!(got[1][0].data[36..38], [0, 0]);
        // An acknowledgement does not hold the 2 KiB it was read into; a
        // full packet keeps the buffer it was read into.
        assert!(
            got[0][0].data.capacity() <= SHORT,
            "{}",
            got[0][0].data.capacity()
        );
        assert_eq!(got[1][0].data.capacity(), PLAIN);
    }

    /// Due packets go out as a device would take them: a run of segments
    /// of one flow as the one GSO packet `merge_run` makes of them,
    /// gathered from where they lie; a packet of another flow after it
    /// on its own, behind an empty virtio-net header.
    #[test]
    fn a_run_of_due_segments_is_written_as_one_merged_packet() {
        use emu_core::offload::merge_run;
        const ACK: u8 = 0x10;
        let mut segments = Vec::new();
        split_read(
            &tso_read(1448, &tcp_v4(1448 * 40 + 321, ACK)),
            0,
            &mut Vec::new(),
            &mut segments,
        );
        assert_eq!(segments.len(), 41);
        let mut other = tcp_v4(100, ACK);
        other[21] ^= 1; // another source port: not part of the run
        let mut due: Vec<(Packet, Nanos)> = segments.iter().map(|p| (p.clone(), 0)).collect();
        due.push((Packet::new(other.clone(), 0), 0));
        let mut fds = [0; 2];
        // SAFETY: creating a socket pair we own and close below.
        let made =
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr()) };
        assert_eq!(made, 0);
        let mut late = 0;
        let errors = write_due(fds[1], &due, &mut Vec::new(), |_| late += 1);
        assert_eq!((errors, late), (0, 42));
        let mut buffer = vec![0u8; READ_BUFFER];
        let mut next = || {
            // SAFETY: reading into a buffer we own from our socket.
            let n = unsafe { libc::read(fds[0], buffer.as_mut_ptr().cast(), buffer.len()) };
            assert!(n > 0);
            buffer[..n as usize].to_vec()
        };
        let mut merged = Vec::new();
        merge_run(segments.iter().map(|p| p.data.as_slice()), &mut merged);
        assert_eq!(next(), merged);
        assert_eq!(next(), [&[0u8; VNET_HDR_LEN][..], &other].concat());
        // SAFETY: closing the descriptors made above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
