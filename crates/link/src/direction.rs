//! The rules that join one direction's options into the direction a
//! link is built from, written once for every front end: the shells'
//! flags (`emu link --queue-steps ... --shaper htb`) and the experiment
//! files' keys (`queue_steps = ...`, `shaper = "htb"`) fill the same
//! [`DirectionOptions`], and each words a [`DirectionError`] as its user
//! wrote the input (`link: --queue-steps ...` or `x.toml: key
//! hosts.a.up.queue_steps: ...`).
//!
//! Each option's own text is read by [`crate::options`]; what is left
//! here is what needs more than one option: the queue a direction starts
//! with, the server a rate schedule replaces, a shaper's need of a rate,
//! and the dynamics put together. Nothing here is per packet.

use crate::options::{LinkDynamics, LossDynamics};
use crate::{DelayDynamics, Dynamics, Pattern, QueueStep, Server};
use aqm::QueueSpec;
use std::fmt;

/// Which rule one direction's options broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectionError {
    /// The queue's own text did not read (the queue's parser's words).
    Queue(String),
    /// Queue steps give the queue itself, so no queue may be given too.
    QueueGivenTwice,
    /// A shaper shapes a rate: the direction has a trace or no rate.
    ShaperWithoutRate,
}

impl fmt::Display for DirectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectionError::Queue(problem) => f.write_str(problem),
            DirectionError::QueueGivenTwice => {
                f.write_str("queue steps give the queue itself: leave out the queue")
            }
            DirectionError::ShaperWithoutRate => f.write_str("a shaper shapes a rate"),
        }
    }
}

/// The queue a direction starts with, and the replacements that follow
/// it: the queue steps' own when the server's options give steps (then
/// `queue`, the direction's own text, must be absent), else `queue`
/// read, else `default`.
pub fn starting_queue(
    queue: Option<&str>,
    server: &LinkDynamics,
    default: QueueSpec,
) -> Result<(QueueSpec, Vec<QueueStep>), DirectionError> {
    match (&server.queue_steps, queue) {
        (Some(_), Some(_)) => Err(DirectionError::QueueGivenTwice),
        (Some((first, rest)), None) => Ok((first.clone(), rest.clone())),
        (None, Some(text)) => Ok((
            QueueSpec::parse(text).map_err(|e| DirectionError::Queue(e.to_string()))?,
            Vec::new(),
        )),
        (None, None) => Ok((default, Vec::new())),
    }
}

/// One direction's options, each already read: what a front end fills.
#[derive(Debug, Clone)]
pub struct DirectionOptions {
    /// The direction's own server (a rate or a trace; unlimited when it
    /// has none): a rate schedule among `server_dynamics` replaces it.
    pub server: Server,
    /// The delay's dynamics (jitter, schedules, a walk, a trace).
    pub delay_dynamics: DelayDynamics,
    /// The server's dynamics (schedules, outages, aggregation, slots,
    /// queue steps, a shaper).
    pub server_dynamics: LinkDynamics,
    /// The loss model and the mangling.
    pub loss_dynamics: LossDynamics,
    /// The replacements after the starting queue ([`starting_queue`]).
    pub queue_steps: Vec<QueueStep>,
}

/// What the rules make of [`DirectionOptions`]: the server, the loss
/// model where one was given, and the dynamics (the link's seed and
/// streams are given where it is built).
#[derive(Debug, Clone)]
pub struct Direction {
    pub server: Server,
    pub loss: Option<Pattern>,
    pub dynamics: Dynamics,
}

impl DirectionOptions {
    /// Joins the options: the schedule's server over the direction's own,
    /// a shaper only over a rate, the server's aggregation and slots
    /// beside the delay's dynamics.
    pub fn build(self) -> Result<Direction, DirectionError> {
        let server = self.server_dynamics.server_or(self.server);
        if self.server_dynamics.shaper_without_rate(&server) {
            return Err(DirectionError::ShaperWithoutRate);
        }
        let LinkDynamics {
            outages,
            aggregate,
            slot,
            shaper,
            ..
        } = self.server_dynamics;
        Ok(Direction {
            server,
            loss: self.loss_dynamics.pattern,
            dynamics: Dynamics {
                delay: DelayDynamics {
                    aggregate,
                    slot,
                    ..self.delay_dynamics
                },
                outages,
                queue_steps: self.queue_steps,
                shaper,
                duplicate: self.loss_dynamics.duplicate,
                corrupt: self.loss_dynamics.corrupt,
                ..Dynamics::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::LinkOptions;
    use emu_core::Rate;

    fn server_dynamics(options: LinkOptions) -> LinkDynamics {
        options.parse(false).expect("the options read")
    }

    #[test]
    fn queue_steps_give_the_starting_queue_and_refuse_another() {
        let steps = server_dynamics(LinkOptions {
            queue_steps: Some("0s=droptail packets 10,5s=droptail packets 20".into()),
            ..Default::default()
        });
        let (first, rest) =
            starting_queue(None, &steps, QueueSpec::Infinite).expect("the steps' queue");
        assert!(matches!(first, QueueSpec::Droptail(_)), "{first:?}");
        assert_eq!(rest.len(), 1);
        assert_eq!(
            starting_queue(Some("codel"), &steps, QueueSpec::Infinite).unwrap_err(),
            DirectionError::QueueGivenTwice
        );
        let none = LinkDynamics::default();
        let (default, rest) = starting_queue(None, &none, QueueSpec::Infinite).unwrap();
        assert!(matches!(default, QueueSpec::Infinite) && rest.is_empty());
        assert!(matches!(
            starting_queue(Some("no such queue"), &none, QueueSpec::Infinite),
            Err(DirectionError::Queue(_))
        ));
    }

    fn options(server: Server, server_dynamics: LinkDynamics) -> DirectionOptions {
        DirectionOptions {
            server,
            delay_dynamics: DelayDynamics::default(),
            server_dynamics,
            loss_dynamics: LossDynamics {
                pattern: None,
                duplicate: 0.25,
                corrupt: 0.0,
            },
            queue_steps: Vec::new(),
        }
    }

    #[test]
    fn a_shaper_needs_a_rate() {
        let shaper = server_dynamics(LinkOptions {
            shaper: Some("htb".into()),
            aggregate: Some("2ms".into()),
            ..Default::default()
        });
        let unlimited = options(Server::Unlimited, shaper.clone()).build();
        assert_eq!(unlimited.unwrap_err(), DirectionError::ShaperWithoutRate);
        let rate = Rate::parse("10mbit").unwrap();
        let built = options(Server::Rate(rate), shaper).build().expect("a rate");
        assert!(built.dynamics.shaper.is_some());
        // The server's aggregation joins the delay's dynamics, the
        // mangling the link's.
        assert_eq!(built.dynamics.delay.aggregate, Some(2_000_000));
        assert_eq!(built.dynamics.duplicate, 0.25);
    }

    #[test]
    fn a_rate_schedule_replaces_the_directions_own_server() {
        let schedule = server_dynamics(LinkOptions {
            rate_steps: Some("0s=100mbit,10s=20mbit".into()),
            ..Default::default()
        });
        let built = options(Server::Unlimited, schedule).build().unwrap();
        assert!(
            matches!(built.server, Server::Schedule(_)),
            "{:?}",
            built.server
        );
    }
}
