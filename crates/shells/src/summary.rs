//! What each direction did, checked against the rule that nothing is lost
//! silently: read = delivered + dropped (by reason) + queued at exit, with
//! the pump's lateness and emu's own CPU time.

use crate::accounting::kernel_drops::KernelDrops;
use crate::accounting::overload::LATE_P99_LIMIT;
use crate::accounting::receiver_drops::ReceiverDrops;
use crate::datapath::pump::DirectionResult;
use crate::spec::ShellSpec;
use crate::sys::usage::{self, OwnUsage};
use emu_core::log::Direction;

/// The accounting of a run, as text for the terminal and JSON for the log
/// directory.
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) json: String,
}

/// Per direction: read (+ duplicated, when the path makes copies) =
/// delivered + dropped (by reason) + queued at exit; then what the
/// receivers on either side dropped of what was delivered (None: the
/// counters could not be read).
pub(crate) fn summarize(
    shells: &[ShellSpec],
    depth: usize,
    results: &[(usize, Direction, DirectionResult)],
    receivers: Option<ReceiverDrops>,
    (log_lost, log_unwritten): (u64, u64),
    wall: f64,
) -> Summary {
    let mut text = String::new();
    let mut entries = Vec::new();
    for (index, direction, r) in results {
        let shell = &shells[index - depth];
        let description = &shell.description;
        let scale = shell.directions[*direction as usize].finest_queue_time_scale();
        text += &direction_line(description, *direction, r);
        text += &kernel_line(&r.kernel);
        text += &overload_line(r);
        text += &queue_line(scale.as_ref(), r);
        let mut entry = direction_json(*index, description, *direction, r);
        if let Some(scale) = scale {
            entry["queue_time_scale"] = serde_json::json!({
                "ns": scale.ns,
                "set_by": scale.what,
                "bar_ns": scale.lateness_bar(),
                "kept": r.lateness.quantile_ns(0.99) <= scale.lateness_bar(),
            });
        }
        entries.push(entry);
    }
    text += &receivers_line(receivers);
    let OwnUsage {
        user,
        system,
        sleeps,
    } = usage::own_usage();
    text += &format!(
        "emu: CPU used by emu itself: {user:.2} s user + {system:.2} s system over {wall:.2} s ({:.0}% of one core); its threads slept and woke {sleeps} times\n",
        (user + system) / wall * 100.0
    );
    let json = serde_json::json!({
        "log_records_lost": log_lost,
        "log_records_unwritten": log_unwritten,
        "process": { "cpu_user_s": user, "cpu_system_s": system, "wall_s": wall, "sleeps": sleeps },
        "directions": entries,
        "receivers": receivers.map(|r| serde_json::json!({
            "udp_buffer_drops_inside": r.inside,
            "udp_buffer_drops_outside": r.outside,
        })),
    });
    Summary {
        text,
        json: format!("{json}\n"),
    }
}

/// How a direction's pump waited for departures: its mean spin, the
/// slack it accepted, and the share of its waits it ticked for where any.
fn waiting(r: &DirectionResult) -> String {
    let mut said = match (r.spin, r.slack) {
        (Some(spin), Some(slack)) => format!(
            "spin {:.0} us, slack {:.0} us",
            spin as f64 / 1e3,
            slack as f64 / 1e3
        ),
        (Some(spin), None) => format!("spin {:.0} us", spin as f64 / 1e3),
        (None, _) => "busy poll".to_string(),
    };
    if let Some(share) = r.ticked_share.filter(|share| *share > 0.0) {
        said += &format!(", {:.0}% of waits ticked", share * 100.0);
    }
    said
}

/// A direction's accounting line: read = delivered + dropped + queued,
/// and how late its writes were.
fn direction_line(description: &str, direction: Direction, r: &DirectionResult) -> String {
    let c = r.link.counters();
    let queued = r.link.packets_inside();
    let drops: Vec<String> = c
        .dropped
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(reason, n)| format!("{} {n}", reason.name()))
        .collect();
    format!(
        "emu: [{description}] {}: read {}{}{} = delivered {} + dropped {}{} + queued {}{}{}; written late by mean {:.1} us, p99 {:.1} us ({})\n",
        direction.name(),
        r.read,
        part(r.handed_in > 0, || format!(" ({} handed over in memory)", r.handed_in)),
        part(c.duplicated > 0, || format!(" + duplicated {}", c.duplicated)),
        c.delivered,
        c.dropped_total(),
        part(!drops.is_empty(), || format!(" ({})", drops.join(", "))),
        queued,
        part(c.corrupted > 0, || format!(" ({} corrupted)", c.corrupted)),
        part(r.write_errors > 0, || format!(" ({} writes refused by the kernel)", r.write_errors)),
        r.lateness.mean_ns() / 1e3,
        r.lateness.quantile_ns(0.99) as f64 / 1e3,
        waiting(r),
    )
}

/// `text` where it is `shown`, else nothing: an optional part of a line.
fn part(shown: bool, text: impl FnOnce() -> String) -> String {
    if shown {
        text()
    } else {
        String::new()
    }
}

/// The overload line of a direction, where any second broke emu's bound.
fn overload_line(r: &DirectionResult) -> String {
    if r.overload.overloaded == 0 {
        return String::new();
    }
    format!(
        "emu:   overloaded: in {} of {} one-second windows packets were written late by p99 > {} us (worst p99 {:.0} us, mean {:.0} us); the path's timing was not exact\n",
        r.overload.overloaded,
        r.overload.windows,
        LATE_P99_LIMIT / 1_000,
        r.overload.worst_p99_ns as f64 / 1e3,
        r.overload.worst_mean_ns / 1e3,
    )
}

/// The line of a direction whose writes were late at p99 past half its
/// queue's finest time scale (see [`aqm::TimeScale::lateness_bar`]): the
/// queue then marked or dropped for the machine's delays too.
fn queue_line(scale: Option<&aqm::TimeScale>, r: &DirectionResult) -> String {
    let p99 = r.lateness.quantile_ns(0.99);
    match scale {
        Some(scale) if p99 > scale.lateness_bar() => format!(
            "emu:   late past the queue: writes were {:.2} ms late at the 99th percentile, past half of {} ({:.2} ms): \
             the queue marked or dropped for the machine's delays as well as the flows'\n",
            p99 as f64 / 1e6,
            scale.what,
            scale.lateness_bar() as f64 / 1e6,
        ),
        _ => String::new(),
    }
}

/// A direction's accounting in the summary's JSON.
fn direction_json(
    index: usize,
    description: &str,
    direction: Direction,
    r: &DirectionResult,
) -> serde_json::Value {
    let c = r.link.counters();
    let dropped: serde_json::Map<String, serde_json::Value> = c
        .dropped
        .iter()
        .map(|(reason, n)| (reason.name().to_string(), n.into()))
        .collect();
    serde_json::json!({
        "shell": index,
        "description": description,
        "direction": direction.name(),
        "read": r.read,
        "handed_in": r.handed_in,
        "arrived": c.arrived,
        "delivered": c.delivered,
        "delivered_bytes": c.delivered_bytes,
        "dropped": dropped,
        "queued_at_exit": r.link.packets_inside(),
        "marked_ce": c.marked_ce,
        "marked_ect1": c.marked_ect1,
        "duplicated": c.duplicated,
        "corrupted": c.corrupted,
        "write_errors": r.write_errors,
        "queue": r.link.queue_description(),
        "departure_lateness": r.lateness.to_json(),
        "spin_ns": r.spin,
        "ticked_share": r.ticked_share,
        "slack_ns": r.slack,
        "overload": {
            "windows": r.overload.windows,
            "overloaded_windows": r.overload.overloaded,
            "worst_p99_ns": r.overload.worst_p99_ns,
            "worst_mean_ns": r.overload.worst_mean_ns.round(),
            "limit_p99_ns": LATE_P99_LIMIT,
        },
        "kernel": if r.kernel.known {
            serde_json::json!({
                "dropped_before_read": r.kernel.on_the_way_in(),
                "tun_ring_dropped": r.kernel.ring,
                "qdisc_dropped": r.kernel.qdisc,
                "dropped_after_write": r.kernel.after_write,
            })
        } else {
            serde_json::Value::Null
        },
    })
}

/// The second line of a direction's accounting: what the kernel dropped
/// before emu read (the TUN device's ring and its qdisc) and after it wrote.
fn kernel_line(k: &KernelDrops) -> String {
    if !k.known {
        return "emu:   the kernel's drop counters could not be read (the device was gone)\n"
            .into();
    }
    let mut line = format!(
        "emu:   the kernel dropped {} on the way in",
        k.on_the_way_in()
    );
    if k.on_the_way_in() > 0 {
        line += &format!(
            " ({} at the TUN device's ring, {} in its qdisc: emu did not read them in time; they never reached the emulated path)",
            k.ring, k.qdisc
        );
    }
    if k.after_write > 0 {
        line += &format!(" and {} after emu wrote them", k.after_write);
    }
    line + "\n"
}

/// What receivers dropped after emu delivered, when they dropped any:
/// such a loss shows to the receiving program like the path's own.
fn receivers_line(receivers: Option<ReceiverDrops>) -> String {
    let Some(ReceiverDrops { inside, outside }) = receivers else {
        return "emu: the receivers' UDP drop counters could not be read\n".into();
    };
    if inside + outside == 0 {
        return String::new();
    }
    format!(
        "emu: receiving sockets dropped {} UDP datagrams after emu delivered them, their buffers full ({inside} inside the shell, {outside} outside it, where other programs count too): lost past the emulated path, not on it\n",
        inside + outside
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::lateness::Lateness;
    use crate::spec::DirectionSpec;
    use emu_core::log::LogSink;
    use link::{Link, LinkConfig, Server};

    /// One shell whose uplink has `queue` (at 50 Mbit/s), and that
    /// direction's result with `lateness`.
    fn shell_and_result(
        description: &str,
        queue: &str,
        lateness: Lateness,
    ) -> (ShellSpec, DirectionResult) {
        let spec = ShellSpec {
            kind: "link",
            description: description.into(),
            directions: std::array::from_fn(|_| DirectionSpec {
                delay: 0,
                server: Server::Rate(emu_core::Rate::from_bits_per_sec(50_000_000).unwrap()),
                queue: aqm::QueueSpec::parse(queue).unwrap(),
                loss: link::Pattern::Bernoulli(0.0),
                overhead: 0,
                link_layer: Default::default(),
                dynamics: Default::default(),
            }),
            seed: Some(0),
        };
        let link = Link::new(
            LinkConfig {
                shell: 0,
                direction: Direction::Uplink,
                delay: 0,
                server: Server::Unlimited,
                queue: aqm::build_queue("infinite").unwrap(),
                loss: None,
                max_packet: 1500,
                overhead: 0,
                dynamics: Default::default(),
            },
            0,
            LogSink::disabled(),
        );
        let result = DirectionResult {
            link,
            read: 0,
            handed_in: 0,
            write_errors: 0,
            lateness,
            overload: Default::default(),
            spin: Some(3_000),
            slack: Some(20_000),
            ticked_share: Some(0.0),
            kernel: KernelDrops {
                known: true,
                ring: 5,
                qdisc: 0,
                after_write: 0,
            },
        };
        (spec, result)
    }

    /// The summary of one 50 Mbit/s uplink through `queue` whose 100
    /// writes were each `late_ns` late.
    fn summary_through(queue: &str, late_ns: u64) -> Summary {
        let mut lateness = Lateness::default();
        for _ in 0..100 {
            lateness.record(late_ns);
        }
        let (spec, result) = shell_and_result("link 50mbit", queue, lateness);
        summarize(
            &[spec],
            0,
            &[(0, Direction::Uplink, result)],
            None,
            (0, 0),
            1.0,
        )
    }

    /// Writes late past half the queue's finest time scale (DualPI2's 1 ms
    /// step) are said, in the text and the JSON; under it, nothing is.
    #[test]
    fn writes_late_past_the_queues_step_are_said() {
        for (late_ns, said) in [(1_500_000, true), (400_000, false), (600_000, true)] {
            let summary = summary_through("dualpi2", late_ns);
            let line = format!(
                "late past the queue: writes were {:.2} ms late at the 99th percentile, \
                 past half of dualpi2's L-queue marking step (0.50 ms)",
                late_ns as f64 / 1e6
            );
            assert_eq!(summary.text.contains(&line), said, "{}", summary.text);
            assert!(!said || summary.text.matches("late past the queue").count() == 1);
            let parsed: serde_json::Value = serde_json::from_str(&summary.json).unwrap();
            let scale = &parsed["directions"][0]["queue_time_scale"];
            assert_eq!(scale["ns"], 1_000_000, "{scale}");
            assert_eq!(scale["kept"], !said, "{scale}");
        }
        // A FIFO decides on nothing finer than its capacity.
        let summary = summary_through("droptail packets 100", 3_000_000);
        assert!(
            !summary.text.contains("late past the queue"),
            "{}",
            summary.text
        );
    }

    /// A trace named with quotes, control characters and non-ASCII still
    /// gives a summary that JSON readers accept, with the name intact.
    #[test]
    fn the_summary_is_valid_json_whatever_the_description() {
        let description = "link up \"ünï\u{1}\ttrace\".up";
        let (spec, result) = shell_and_result(description, "infinite", Lateness::default());
        let receivers = Some(ReceiverDrops {
            inside: 0,
            outside: 7,
        });
        let summary = summarize(
            &[spec],
            0,
            &[(0, Direction::Uplink, result)],
            receivers,
            (0, 0),
            1.0,
        );
        let parsed: serde_json::Value = serde_json::from_str(&summary.json).expect("valid JSON");
        assert_eq!(parsed["directions"][0]["description"], description);
        assert_eq!(parsed["directions"][0]["dropped"]["tail"], 0);
        assert_eq!(parsed["directions"][0]["departure_lateness"]["packets"], 0);
        assert_eq!(parsed["directions"][0]["kernel"]["dropped_before_read"], 5);
        assert!(summary.text.contains("the kernel dropped 5 on the way in"));
        assert_eq!(parsed["directions"][0]["slack_ns"], 20_000);
        assert!(summary.text.contains("(spin 3 us, slack 20 us)"));
        assert_eq!(parsed["directions"][0]["ticked_share"], 0.0);
        assert_eq!(parsed["receivers"]["udp_buffer_drops_outside"], 7);
        assert!(summary
            .text
            .contains("receiving sockets dropped 7 UDP datagrams"));
    }

    /// The receivers' line is there when they lost something, and says so
    /// when it cannot tell; nothing lost needs no line.
    #[test]
    fn the_receivers_line_speaks_only_of_losses_or_of_not_knowing() {
        let none = ReceiverDrops::default();
        assert_eq!(receivers_line(Some(none)), "");
        assert!(receivers_line(None).contains("could not be read"));
        let some = receivers_line(Some(ReceiverDrops {
            inside: 3,
            outside: 4,
        }));
        assert!(some.contains("dropped 7 UDP datagrams"), "{some}");
        assert!(some.contains("3 inside the shell, 4 outside"), "{some}");
    }
}
