//! The path's elements as a controller addresses them, and the two things
//! it does to them: a change applied to several at one instant, and a
//! reading of their settings and counters.
//!
//! A change crosses to the link threads as a queue step does: the control
//! thread takes each model's lock (as a reader thread does to run it),
//! puts the change in the model's own list for its instant, and rings the
//! pump, which takes it when the model runs to that instant. The lock is
//! held for the few microseconds this takes, once per change and once per
//! element per telemetry reading; the packet path itself pays nothing
//! more than the model's look at its (empty) list.

use super::protocol::{Named, When};
use crate::datapath::direction::{lock, Shared};
use emu_core::log::DropReason;
use emu_core::time::monotonic_now;
use emu_core::Nanos;
use link::Setting;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One direction of one shell.
pub struct Element {
    /// `SHELL.DIRECTION`, the shell's index as its log file names it.
    pub(crate) name: String,
    pub(crate) shared: Arc<Shared>,
    /// Subscriptions that read its sojourns.
    watchers: AtomicUsize,
}

/// Every element of a run, and the instant its run time counts from.
pub struct Elements {
    pub(crate) list: Vec<Element>,
    /// Monotonic time of run time 0: the innermost shell's start, when
    /// every link exists.
    pub(crate) origin: Nanos,
}

impl Elements {
    pub(crate) fn new(list: Vec<(String, Arc<Shared>)>, origin: Nanos) -> Elements {
        Elements {
            list: list
                .into_iter()
                .map(|(name, shared)| Element {
                    name,
                    shared,
                    watchers: AtomicUsize::new(0),
                })
                .collect(),
            origin,
        }
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|e| e.name.clone()).collect()
    }

    /// The run time now.
    pub fn run_time(&self) -> Nanos {
        monotonic_now().saturating_sub(self.origin)
    }

    /// The elements `names` name (all for none), in the run's order.
    pub fn find(&self, names: &[String]) -> Result<Vec<usize>, String> {
        if names.is_empty() {
            return Ok((0..self.list.len()).collect());
        }
        let mut found = Vec::new();
        for name in names {
            match self.list.iter().position(|e| &e.name == name) {
                Some(k) if !found.contains(&k) => found.push(k),
                Some(_) => {}
                None => return Err(self.unknown(name)),
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    fn unknown(&self, name: &str) -> String {
        format!(
            "unknown element '{name}' (elements: {})",
            self.names().join(", ")
        )
    }

    /// Applies `settings` at one instant, or changes nothing: every
    /// element's model is held while each is checked and given the change.
    /// The run time the change takes effect at. `past_allowed` lets a
    /// replayed change whose run time has gone by take effect at once.
    pub fn apply(
        &self,
        settings: &[Named],
        when: When,
        past_allowed: bool,
    ) -> Result<Nanos, String> {
        let mut by_element: Vec<(usize, Vec<Setting>)> = Vec::new();
        for named in settings {
            let k = self.find(std::slice::from_ref(&named.element))?[0];
            match by_element.iter_mut().find(|(e, _)| *e == k) {
                Some((_, list)) => list.push(named.setting.clone()),
                None => by_element.push((k, vec![named.setting.clone()])),
            }
        }
        by_element.sort_by_key(|(k, _)| *k);
        // Always in the run's order, so two controllers cannot deadlock.
        let mut models: Vec<_> = by_element
            .iter()
            .map(|(k, _)| lock(&self.list[*k].shared.model))
            .collect();
        let now = monotonic_now();
        let mut at = match when {
            When::Now => now,
            When::After(after) => now + after,
            When::At(run_time) if self.origin + run_time < now && !past_allowed => {
                return Err(format!(
                    "at {}: that run time has passed (it is {} now)",
                    seconds(run_time),
                    seconds(now - self.origin)
                ))
            }
            When::At(run_time) => self.origin + run_time,
        };
        for model in &models {
            let link = model
                .link
                .as_ref()
                .ok_or_else(|| "the run is ending; nothing was changed".to_string())?;
            at = at.max(link.clock());
        }
        for ((k, settings), model) in by_element.iter().zip(&models) {
            let link = model.link.as_ref().expect("looked at above");
            link.check_settings(at, settings)
                .map_err(|e| format!("{}: {e}; nothing was changed", self.list[*k].name))?;
        }
        for ((_, settings), model) in by_element.iter().zip(models.iter_mut()) {
            let link = model.link.as_mut().expect("checked above");
            link.steer(at, settings.clone());
        }
        drop(models);
        for (k, _) in &by_element {
            self.list[*k].shared.wake.ring();
        }
        Ok(at - self.origin.min(at))
    }

    /// Starts or stops keeping the sojourns of the elements `watched`.
    pub fn watch(&self, watched: &[usize], on: bool) {
        for &k in watched {
            let element = &self.list[k];
            let before = if on {
                element.watchers.fetch_add(1, Ordering::AcqRel)
            } else {
                element.watchers.fetch_sub(1, Ordering::AcqRel)
            };
            let first_or_last = if on { before == 0 } else { before == 1 };
            if first_or_last {
                if let Some(link) = lock(&element.shared.model).link.as_mut() {
                    link.watch_sojourns(on);
                }
            }
        }
    }

    /// The settings and counters of the elements `which`, by name; the
    /// sojourn quantiles are of the packets that left since the last
    /// reading, while a subscription keeps them.
    pub fn read(&self, which: &[usize]) -> Value {
        let mut out = Map::new();
        for &k in which {
            let element = &self.list[k];
            let mut model = lock(&element.shared.model);
            let Some(link) = model.link.as_mut() else {
                continue;
            };
            out.insert(element.name.clone(), reading(link));
        }
        Value::Object(out)
    }
}

/// One element's settings and counters, as JSON.
fn reading(link: &mut link::Link) -> Value {
    let settings = link.settings();
    let sojourns = link.take_sojourns();
    let (queue_packets, queue_bytes) = link.queue_occupancy();
    let c = link.counters();
    let dropped: Map<String, Value> = DropReason::ALL
        .iter()
        .map(|r| (r.name().to_string(), json!(c.dropped_by(*r))))
        .collect();
    let mut value = json!({
        "rate_bps": settings.rate_bps,
        "delay_ns": settings.delay_ns,
        "loss": settings.loss,
        "jitter_ns": settings.jitter_ns,
        "queue": settings.queue,
        "arrived_packets": c.arrived,
        "arrived_bytes": c.arrived_bytes,
        "delivered_packets": c.delivered,
        "delivered_bytes": c.delivered_bytes,
        "dropped_packets": c.dropped_total(),
        "dropped": dropped,
        "marked_ce": c.marked_ce,
        "marked_ect1": c.marked_ect1,
        "queue_packets": queue_packets,
        "queue_bytes": queue_bytes,
    });
    if let Some(window) = sojourns {
        value["departed_in_window"] = json!(window.count());
        value["sojourn_p50_ns"] = json!(window.quantile(0.5));
        value["sojourn_p99_ns"] = json!(window.quantile(0.99));
    }
    value
}

/// A run time as `12.345s`.
pub fn seconds(ns: Nanos) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}
