//! The link's side of a change asked from outside (see
//! [`crate::steering`]): whether it can make it, when it takes it, and
//! what each setting does to the model's parts.

use super::Link;
use crate::capacity::{RateCurve, ServiceCurve};
use crate::jitter::{Jitter, JitterSpec};
use crate::loss::{Loss, Pattern};
use crate::propagation::Propagation;
use crate::server::ServerState;
use crate::steering::{Setting, Settings, SojournWindow};
use crate::Distribution;
use emu_core::log::Change;
use emu_core::rate::Serializer;
use emu_core::Nanos;

impl Link {
    /// The model's time: the latest instant it has run to.
    pub fn clock(&self) -> Nanos {
        self.clock
    }

    /// Whether every one of `settings` is a change this link can make at
    /// `at`, against the queue it will have then (one replaced earlier in
    /// the same change, or waiting to be, counts); the first it cannot,
    /// said in one line.
    pub fn check_settings(&self, at: Nanos, settings: &[Setting]) -> Result<(), String> {
        let mut replaced = self.steering.last_queue_before(at).cloned();
        for setting in settings {
            match setting {
                Setting::Rate(_) if matches!(self.server, ServerState::Trace { .. }) => {
                    return Err("its rate follows a delivery trace and cannot be set".into())
                }
                Setting::Loss(p) if !(0.0..=1.0).contains(p) => {
                    return Err(format!("loss {p} is not a probability from 0 to 1"))
                }
                Setting::Loss(_)
                    if self
                        .loss
                        .as_ref()
                        .is_some_and(|l| !matches!(l.pattern(), Pattern::Bernoulli(_))) =>
                {
                    return Err(
                        "its loss follows a pattern, not a probability that can be set".into(),
                    )
                }
                Setting::QueueParameters(spec) => match &replaced {
                    Some(new) => new.build().accepts_change(spec)?,
                    None => self.queue.accepts_change(spec)?,
                },
                Setting::QueueReplaced(spec) => replaced = Some(spec.clone()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Has `settings` (checked by [`Link::check_settings`]) taken at `at`,
    /// or at the model's time if that is later; the instant they take
    /// effect. The model takes them when it next runs to that instant.
    pub fn steer(&mut self, at: Nanos, settings: Vec<Setting>) -> Nanos {
        let at = at.max(self.clock);
        self.steering.add(at, settings);
        at
    }

    /// Runs the model to `at` and takes the first change waiting.
    pub(super) fn take_steering(&mut self, at: Nanos) {
        self.run_to(at);
        let Some((_, settings)) = self.steering.pop() else {
            return;
        };
        let at = at.max(self.clock);
        for setting in settings {
            self.take_setting(at, setting);
        }
    }

    fn take_setting(&mut self, at: Nanos, setting: Setting) {
        match setting {
            Setting::Rate(rate) => {
                self.set_rate(at, rate);
                self.record_change(at, Change::Rate, rate.bits_per_sec());
            }
            Setting::Delay(delay) => {
                self.delay = delay;
                self.line_from(at).set_base(delay);
                self.unfollow(Change::Delay);
                self.record_change(at, Change::Delay, delay);
            }
            Setting::Loss(p) => {
                match &mut self.loss {
                    Some(loss) => {
                        loss.set_probability(p);
                    }
                    None => {
                        let mut loss = Loss::new(p, self.seeds.0, self.seeds.1);
                        loss.start(at);
                        self.loss = Some(loss);
                    }
                }
                self.record_change(at, Change::Loss, (p * 1e9).round() as u64);
            }
            Setting::Jitter(sigma) => {
                let (seed, stream) = self.seeds;
                let line = self.line_from(at);
                let spec = match line.jitter() {
                    Some(j) => JitterSpec {
                        sigma,
                        ..j.spec().clone()
                    },
                    None => JitterSpec {
                        sigma,
                        correlation: 0.0,
                        distribution: Distribution::Normal,
                    },
                };
                line.set_jitter((sigma > 0).then(|| Jitter::new(spec, seed, stream)));
                self.record_change(at, Change::Jitter, sigma);
            }
            Setting::QueueParameters(spec) => {
                let spec = spec.on_link_layer(self.link_layer);
                self.queue.change(&spec, at, &mut self.outcome);
                self.settle_outcome();
                self.queue_changes += 1;
                self.record_change(at, Change::QueueParameters, self.queue_changes);
            }
            Setting::QueueReplaced(spec) => {
                let number = self.next_queue_number;
                self.next_queue_number += 1;
                self.put_queue(at, number, &spec);
            }
        }
    }

    /// The server sends at `rate` from `at`: a packet on the wire keeps
    /// the finish it was given; a rate schedule ends; a link that had no
    /// rate gets one.
    fn set_rate(&mut self, at: Nanos, rate: emu_core::Rate) {
        let has_outages = self.outage.is_some();
        let constant = || {
            has_outages.then(|| {
                Box::new(ServiceCurve {
                    rate: RateCurve::Constant(rate.bits_per_sec()),
                })
            })
        };
        match &mut self.server {
            ServerState::Rate {
                serializer, curve, ..
            } => {
                *serializer = Serializer::new(rate);
                *curve = constant();
            }
            ServerState::Unlimited => {
                self.server = ServerState::Rate {
                    serializer: Serializer::new(rate),
                    busy_until: at,
                    curve: constant(),
                    shaper: None,
                };
            }
            ServerState::Trace { .. } => {}
        }
        self.unfollow(Change::Rate);
    }

    /// The delay line, made one of constant delay if the link had none;
    /// packets after `at` never overtake those already in flight.
    fn line_from(&mut self, at: Nanos) -> &mut Propagation {
        let last_due = self.in_flight.back().map_or(at, |f| f.due);
        let (delay, start) = (self.delay, self.start);
        self.propagation
            .get_or_insert_with(|| Box::new(Propagation::constant(delay, start, last_due)))
    }

    /// Stops logging a schedule the link no longer follows.
    fn unfollow(&mut self, kind: Change) {
        if let Some(changes) = self.changes.as_deref_mut() {
            changes.unfollow(kind);
        }
    }

    /// What a controller reads of the link's settings now.
    pub fn settings(&self) -> Settings {
        let rate_bps = match &self.server {
            ServerState::Rate {
                serializer, curve, ..
            } => match curve.as_deref() {
                None => Some(serializer.rate().bits_per_sec()),
                Some(ServiceCurve {
                    rate: RateCurve::Constant(bps),
                }) => Some(*bps),
                Some(_) => None,
            },
            _ => None,
        };
        let line = self.propagation.as_deref();
        Settings {
            rate_bps,
            delay_ns: line.map_or(Some(self.delay), |p| p.base()),
            loss: match self.loss.as_ref().map(|l| l.pattern()) {
                None => Some(0.0),
                Some(Pattern::Bernoulli(p)) => Some(p),
                Some(_) => None,
            },
            jitter_ns: line.and_then(|p| p.jitter()).map_or(0, |j| j.spec().sigma),
            queue: self.queue.describe(),
        }
    }

    /// Starts keeping the sojourns of departing packets (for a
    /// controller's telemetry), or stops.
    pub fn watch_sojourns(&mut self, on: bool) {
        self.sojourns = on.then(Box::default);
    }

    /// The sojourns kept since the last call, the window emptied; None
    /// when they are not watched.
    pub fn take_sojourns(&mut self) -> Option<SojournWindow> {
        self.sojourns.as_deref_mut().map(std::mem::take)
    }
}
