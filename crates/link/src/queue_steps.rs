//! A queue whose discipline changes at set times (`queue-steps
//! "0s=dualpi2,20s=pie noecn,40s=dualpi2"`), with the semantics of `tc
//! qdisc replace`.
//!
//! Linux drops what the old qdisc holds: replacing a class's child
//! (`qdisc_replace`, e.g. the qdisc under an htb class) purges the old one
//! (`qdisc_purge_queue`: reset, and the backlog taken off its parents), and
//! replacing a root qdisc deactivates the device, which resets it, before
//! the old one is destroyed. The new qdisc starts empty, with its own
//! state. emu does the same: at the instant of a step, every packet the
//! old queue holds is dropped with reason `replaced` (logged and counted
//! as any drop), and the next packet meets the new queue. A packet already
//! on the wire (being serialized) has left the queue, as one handed to the
//! driver has in Linux, and is kept.
//!
//! Steps are not repeated: the last queue stays to the end of the run.

use crate::schedule::parse_steps;
use aqm::{Outcome, Queue, QueueSpec};
use emu_core::time::parse_duration;
use emu_core::{Nanos, Packet};

/// One step: from `at` (after the link's start) the queue is `queue`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStep {
    pub at: Nanos,
    pub queue: QueueSpec,
}

/// Reads `TIME=QUEUE,...` (first time 0, then strictly increasing), each
/// QUEUE as `--queue` takes it. The first step is the queue the link
/// starts with.
pub fn parse(text: &str) -> Result<Vec<QueueStep>, String> {
    let time = |t: &str| {
        if t.starts_with('-') {
            return Err(format!("'{t}' is a negative time"));
        }
        parse_duration(t).map_err(|e| e.to_string())
    };
    let queue = |q: &str| QueueSpec::parse(q).map_err(|e| format!("'{q}': {e}"));
    let steps = parse_steps(text, time, queue).map_err(|e| {
        format!("{e} (write TIME=QUEUE,... from 0s, e.g. 0s=dualpi2,20s=pie noecn)")
    })?;
    Ok(steps
        .into_iter()
        .map(|(at, queue)| QueueStep { at, queue })
        .collect())
}

/// The queue a link starts with (the first step) and the replacements
/// after it, for [`crate::Dynamics::queue_steps`].
pub fn split(mut steps: Vec<QueueStep>) -> Option<(QueueSpec, Vec<QueueStep>)> {
    if steps.is_empty() {
        return None;
    }
    let first = steps.remove(0);
    Some((first.queue, steps))
}

/// Takes every packet `queue` holds out of it, in no particular order:
/// what it would send and what its AQM would drop on the way alike (the
/// queue is being thrown away, so its marks and drops mean nothing). A
/// shaped queue is run past its shaper's times.
pub(crate) fn drain(queue: &mut dyn Queue, now: Nanos) -> Vec<Packet> {
    let mut packets = Vec::with_capacity(queue.packets());
    let mut scratch = Outcome::default();
    let mut at = now;
    while !queue.is_empty() {
        match queue.dequeue(at, &mut scratch) {
            Some(packet) => packets.push(packet),
            None => match queue.next_ready().filter(|r| *r > at) {
                Some(ready) => at = ready,
                None => break,
            },
        }
        packets.extend(scratch.drops.drain(..).map(|d| d.packet));
    }
    packets.extend(scratch.drops.drain(..).map(|d| d.packet));
    packets
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn steps_read_as_the_shells_write_them_and_bad_ones_are_refused() {
        let steps = parse("0s=dualpi2,20s=pie noecn,40s=dualpi2").unwrap();
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[1].at, 20 * S);
        assert_eq!(steps[1].queue, QueueSpec::parse("pie noecn").unwrap());
        for bad in [
            "",
            "20s=pie",
            "0s=pie,0s=dualpi2",
            "0s=pie,10s=nonesuch",
            "0s=pie,-1s=fifo",
            "0s",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was read");
        }
        let e = parse("0s=pie,10s=nonesuch").unwrap_err();
        assert!(e.contains("nonesuch"), "{e}");
    }

    #[test]
    fn draining_takes_every_packet_out_even_of_an_aqm_or_a_shaper() {
        for text in [
            "droptail packets 100",
            "codel",
            "pie",
            "dualpi2",
            "fq_codel",
            "cake bandwidth 1mbit",
        ] {
            let mut queue = QueueSpec::parse(text).unwrap().build();
            let mut outcome = Outcome::default();
            for i in 0..50u16 {
                let packet = Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], i, 2, 0, 1000), 0);
                queue.enqueue(packet, 0, &mut outcome);
            }
            let held = queue.packets();
            assert!(held > 0, "{text}");
            let out = drain(queue.as_mut(), 5 * S);
            assert_eq!(out.len(), held, "{text}");
            assert!(queue.is_empty(), "{text}");
        }
    }
}
