//! One link direction of an experiment file (a host's side link or a
//! bottleneck) turned into the direction a shell would build: its rate,
//! delay, queue, loss and dynamics keys, each checked where it is read.

use super::plan::DirectionPlan;
use super::schema::*;
use emu_core::trace::Trace;
use link::direction::{self, DirectionError, DirectionOptions};
use link::Server;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

/// One direction of a link, resolved from its keys (its own, else the
/// link's): its server, queue, loss and delay, with every path dynamic
/// read by the shells' own option parsers and joined by the rules of
/// `link::direction`, each error at the key that broke it.
// Long: one key of a direction after another, with the checks between
// keys beside the keys they join.
pub(super) fn direction(
    own: &DirectionSection,
    shared: &DirectionSection,
    source: &Source,
    key: &str,
    base: &Path,
) -> Result<DirectionPlan, ExperimentError> {
    use link::options::OptionError;
    let keys = own.or(shared);
    // An option's error, at its key's line when the key has one.
    let at = |e: OptionError| {
        let name = e.option.replace('-', "_");
        let key = format!("{key}.{name}");
        match spanned_key(&keys, &name) {
            Some(spanned) => source.at(spanned, &key, e.problem),
            None => source.key(&key, e.problem),
        }
    };
    let server = own_server(&keys, source, key, base)?;
    let loss = keys.loss.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&loss) {
        return Err(source.key(&format!("{key}.loss"), "a probability between 0 and 1"));
    }
    let delay = keys.delay.map(|d| d.0).unwrap_or(0);
    let once = keys.once.unwrap_or(false);
    let (delay_dynamics, _) = delay_options(&keys, base, once)
        .parse(keys.delay.map(|d| d.0))
        .map_err(at)?;
    let server_dynamics = link_options(&keys, base).parse(once).map_err(at)?;
    if server_dynamics.rate_given_twice(true, !matches!(server, Server::Unlimited)) {
        let option = if keys.rate_steps.is_some() {
            "rate_steps"
        } else {
            "rate_trace"
        };
        return Err(source.key(
            &format!("{key}.{option}"),
            "a rate schedule gives the rate itself: leave out rate and trace",
        ));
    }
    let queue_text = keys.queue.as_ref().map(|q| q.get_ref().as_str());
    let (queue, queue_steps) =
        direction::starting_queue(queue_text, &server_dynamics, aqm::QueueSpec::Infinite).map_err(
            |e| match (e, &keys.queue) {
                (DirectionError::Queue(e), Some(q)) => source.at(q, &format!("{key}.queue"), e),
                _ => source.key(
                    &format!("{key}.queue_steps"),
                    "queue steps give the queue itself: leave out queue",
                ),
            },
        )?;
    let loss_options = loss_options(&keys);
    if loss_options.is_markov() && keys.loss.is_some() {
        return Err(source.key(
            &format!("{key}.loss"),
            "gemodel and state give the loss themselves: leave out loss",
        ));
    }
    let loss_dynamics = loss_options.parse(Some(loss)).map_err(at)?;
    let link_layer = match &keys.l2 {
        Some(l2) => emu_core::size::LinkLayer::parse(l2.get_ref())
            .map_err(|e| source.at(l2, &format!("{key}.l2"), e))?,
        None => emu_core::size::LinkLayer::None,
    };
    let built = DirectionOptions {
        server,
        delay_dynamics,
        server_dynamics,
        loss_dynamics,
        queue_steps,
    }
    .build()
    .map_err(|_| match keys.shaper.as_ref() {
        Some(shaper) => source.at(
            shaper,
            &format!("{key}.shaper"),
            "a shaper shapes a rate: give this direction a rate or rate_steps, not a trace or none",
        ),
        None => source.key(key, "a shaper shapes a rate"),
    })?;
    Ok(DirectionPlan {
        link_layer,
        delay,
        server: built.server,
        queue,
        loss: built.loss.unwrap_or(link::Pattern::Bernoulli(loss)),
        overhead: keys.overhead.unwrap_or(0),
        dynamics: built.dynamics,
    })
}

/// A direction's own server: its rate or its trace (read relative to
/// `base`), not both; none at all leaves it unlimited.
pub(super) fn own_server(
    keys: &DirectionSection,
    source: &Source,
    key: &str,
    base: &Path,
) -> Result<Server, ExperimentError> {
    Ok(match (keys.rate, keys.trace.as_ref()) {
        (Some(_), Some(trace)) => {
            return Err(source.at(trace, key, "give a rate or a trace, not both"));
        }
        (Some(rate), None) => Server::Rate(rate.0),
        (None, Some(trace)) => {
            let path = base.join(trace.get_ref());
            let loaded =
                Trace::load(&path).map_err(|e| source.at(trace, &format!("{key}.trace"), e))?;
            Server::Trace {
                trace: Arc::new(loaded),
                repeat: !keys.once.unwrap_or(false),
            }
        }
        (None, None) => Server::Unlimited,
    })
}

/// A text key's value.
pub(super) fn text(value: &Option<Spanned<String>>) -> Option<String> {
    value.as_ref().map(|v| v.get_ref().clone())
}

/// A path key's value, relative to `base`.
pub(super) fn path_in(base: &Path, value: &Option<Spanned<String>>) -> Option<PathBuf> {
    value.as_ref().map(|v| base.join(v.get_ref()))
}

/// The delay's dynamics as the `delay` shell's flags would give them.
pub(super) fn delay_options(
    keys: &DirectionSection,
    base: &Path,
    once: bool,
) -> link::options::DelayOptions {
    link::options::DelayOptions {
        jitter: text(&keys.jitter),
        correlation: text(&keys.correlation),
        distribution: text(&keys.distribution),
        reorder: keys.reorder.unwrap_or(false),
        square: text(&keys.square),
        steps: text(&keys.steps),
        walk: text(&keys.walk),
        delay_trace: path_in(base, &keys.delay_trace),
        interpolate: keys.interpolate.unwrap_or(false),
        once,
    }
}

/// The server's dynamics as the `link` shell's flags would give them.
pub(super) fn link_options(keys: &DirectionSection, base: &Path) -> link::options::LinkOptions {
    link::options::LinkOptions {
        rate_steps: text(&keys.rate_steps),
        rate_trace: path_in(base, &keys.rate_trace),
        outage: text(&keys.outage),
        onoff: text(&keys.onoff),
        onoff_exp: text(&keys.onoff_exp),
        aggregate: text(&keys.aggregate),
        slot: text(&keys.slot),
        queue_steps: text(&keys.queue_steps),
        shaper: text(&keys.shaper),
    }
}

/// The loss model and mangling as the `loss` shell's flags would give them.
pub(super) fn loss_options(keys: &DirectionSection) -> link::options::LossOptions {
    let words = |v: &Option<Spanned<String>>| {
        v.as_ref()
            .map(|v| v.get_ref().split_whitespace().map(str::to_string).collect())
    };
    link::options::LossOptions {
        gemodel: words(&keys.gemodel),
        state: words(&keys.state),
        burst: text(&keys.burst),
        duplicate: text(&keys.duplicate),
        corrupt: text(&keys.corrupt),
    }
}

/// The value of a text key of a direction by name, for its line.
pub(super) fn spanned_key<'a>(
    keys: &'a DirectionSection,
    name: &str,
) -> Option<&'a Spanned<String>> {
    match name {
        "jitter" => keys.jitter.as_ref(),
        "correlation" => keys.correlation.as_ref(),
        "distribution" => keys.distribution.as_ref(),
        "square" => keys.square.as_ref(),
        "steps" => keys.steps.as_ref(),
        "walk" => keys.walk.as_ref(),
        "delay_trace" => keys.delay_trace.as_ref(),
        "rate_steps" => keys.rate_steps.as_ref(),
        "rate_trace" => keys.rate_trace.as_ref(),
        "outage" => keys.outage.as_ref(),
        "onoff" => keys.onoff.as_ref(),
        "onoff_exp" => keys.onoff_exp.as_ref(),
        "aggregate" => keys.aggregate.as_ref(),
        "slot" => keys.slot.as_ref(),
        "queue_steps" => keys.queue_steps.as_ref(),
        "shaper" => keys.shaper.as_ref(),
        "gemodel" => keys.gemodel.as_ref(),
        "state" => keys.state.as_ref(),
        "burst" => keys.burst.as_ref(),
        "duplicate" => keys.duplicate.as_ref(),
        "corrupt" => keys.corrupt.as_ref(),
        _ => None,
    }
}
