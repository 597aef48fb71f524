//! One link (its two directions) as every front end builds it: a shell of
//! a chain and each side link and bottleneck of an experiment's dumbbell.
//! Made in one place, so a path dynamic, a loss model or a log-header
//! field added for the shells reaches the experiments too.

use crate::error::{Result, ShellError};
use crate::spec::DirectionSpec;
use crate::sys::privilege;
use emu_core::log::{Direction, LogHeader, LogSink, TraceFile};
use emu_core::time::Nanos;
use link::{Link, LinkConfig, Loss, Server};
use std::path::Path;

/// What a link is, beyond its two directions' specifications.
pub struct LinkSetup<'a> {
    /// Position of the shell in the chain (0 for an experiment's links),
    /// for the log.
    pub shell: u8,
    /// Uplink then downlink.
    pub directions: &'a [DirectionSpec; 2],
    /// The seed every random draw of both directions comes from (loss,
    /// jitter, walks, exponential outages, duplication, corruption).
    pub seed: u64,
    /// Per direction, the stream that keeps its draws apart from every
    /// other direction's drawn from the same seed.
    pub streams: [u64; 2],
    /// Largest IP packet accepted.
    pub max_packet: usize,
    /// Monotonic time the link starts at (its trace and schedules too).
    pub start: Nanos,
}

impl LinkSetup<'_> {
    /// The log header of the link: rates, queues and shapers of both
    /// directions, as a report reads them back.
    pub fn log_header(
        &self,
        description: String,
        command_line: String,
        realtime_start: Nanos,
        traces: Option<[Option<TraceFile>; 2]>,
    ) -> LogHeader {
        LogHeader {
            shell: self.shell,
            description,
            monotonic_origin_ns: self.start,
            realtime_origin_ns: realtime_start,
            rate_bps: Some(self.directions.clone().map(|d| match d.server {
                Server::Rate(r) => Some(r.bits_per_sec()),
                _ => None,
            })),
            command_line,
            traces,
            queues: Some(
                self.directions
                    .clone()
                    .map(|d| serde_json::to_value(d.queue.on_link_layer(d.link_layer)).ok()),
            ),
            shaper_bps: Some(self.directions.clone().map(|d| d.queue.shaper_bps())),
            kernel_dropped: None,
        }
    }

    /// The model of direction `d` (0 uplink, 1 downlink), logging to `log`.
    pub fn build(&self, d: usize, log: LogSink) -> Link {
        let spec = &self.directions[d];
        let stream = self.streams[d];
        let loss = (!spec.loss.is_none()).then(|| Loss::with_pattern(spec.loss, self.seed, stream));
        Link::new(
            LinkConfig {
                shell: self.shell,
                direction: Direction::BOTH[d],
                delay: spec.delay,
                server: spec.server.clone(),
                queue: spec.queue.clone().on_link_layer(spec.link_layer).build(),
                loss,
                max_packet: self.max_packet,
                overhead: spec.overhead,
                dynamics: link::Dynamics {
                    seed: self.seed,
                    stream,
                    ..spec.dynamics.clone()
                },
            },
            self.start,
            log,
        )
        .with_link_layer(spec.link_layer)
    }
}

/// Copies each direction's trace into `dir` (as `<prefix>-<direction>.trace`,
/// in emu's nanosecond format) so the logs carry their own capacity: a
/// report stays right when the original trace has moved or changed.
pub fn copy_traces(
    dir: &Path,
    prefix: &str,
    directions: &[DirectionSpec; 2],
) -> Result<Option<[Option<TraceFile>; 2]>> {
    let mut files = [None, None];
    for (d, direction) in Direction::BOTH.into_iter().enumerate() {
        if let Server::Trace { trace, repeat } = &directions[d].server {
            let file = format!("{prefix}-{}.trace", direction.name());
            let path = dir.join(&file);
            privilege::io_as_invoker(|| std::fs::write(&path, trace.to_emu_text()))
                .map_err(|e| ShellError::os(&format!("writing {}", path.display()), e))?;
            files[d] = Some(TraceFile {
                file,
                repeat: *repeat,
            });
        }
    }
    Ok(files.iter().any(Option::is_some).then_some(files))
}
