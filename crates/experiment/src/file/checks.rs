//! The checks that need more than one key of an experiment file: the
//! `[run]` section's bounds, congestion controls against the kernel's,
//! the keys each kind of flow takes, names, and flows that never cross
//! a bottleneck. Each returns the one message that names the key.

use super::plan::*;
use super::schema::*;
use toml::Spanned;

/// The `[run]` section's bounds.
pub(super) fn check_run(run: &RunSection, source: &Source) -> Result<(), ExperimentError> {
    if run.runs == 0 {
        return Err(source.key("run.runs", "must be at least 1"));
    }
    if run.sample_interval.0 < 10_000_000 {
        return Err(source.key("run.sample_interval", "must be at least 10ms"));
    }
    if run.duration.0 == 0 {
        return Err(source.key("run.duration", "must be longer than 0"));
    }
    if !(576..=9000).contains(&run.mtu) {
        return Err(source.key("run.mtu", "must be between 576 and 9000"));
    }
    Ok(())
}

/// A congestion control named at `key` (`"prague ecn_fallback=1"`): one
/// the kernel has, then the settings of one of emu's, if any.
pub(super) fn check_cc(
    controls: &CongestionControls,
    source: &Source,
    cc: &Spanned<String>,
    key: &str,
) -> Result<Option<endpoints::Settings>, ExperimentError> {
    let available = &controls.available;
    let (name, settings) = endpoints::parameters::split(cc.get_ref());
    if name.is_empty() {
        return Err(source.at(
            cc,
            key,
            format!(
                "is empty: name a congestion control ({}), or leave the key out for the machine's default",
                available.join(", ")
            ),
        ));
    }
    if !available.iter().any(|a| a == name) {
        return Err(source.at(
            cc,
            key,
            format!(
                "congestion control '{name}' is not available in this kernel (available: {}); load its module (modprobe tcp_{name}) or pick one of those",
                available.join(", "),
            ),
        ));
    }
    if settings.is_empty() {
        return Ok(None);
    }
    let Some(endpoint) = endpoints::find(name) else {
        return Err(source.at(
            cc,
            key,
            endpoints::parameters::kernels_refused(name, settings),
        ));
    };
    endpoints::parameters::parse(endpoint, settings)
        .map(Some)
        .map_err(|message| source.at(cc, key, message))
}

/// The congestion control's name alone, without its settings.
pub(super) fn cc_name(cc: &Spanned<String>) -> String {
    endpoints::parameters::split(cc.get_ref()).0.to_string()
}

/// The keys each kind of flow takes besides those every flow takes
/// (`kind`, `from`, `to`, `name`, `start`, `duration`, `count`).
pub(super) fn flow_keys(kind: FlowKind) -> &'static [&'static str] {
    match kind {
        FlowKind::Tcp => &["cc", "bytes", "omit", "tos"],
        FlowKind::Udp => &["rate", "ecn", "size", "omit"],
        FlowKind::Ping => &["interval"],
        FlowKind::Pantheon => &["wrapper", "setup_time"],
        FlowKind::Command => &["command"],
    }
}

/// The key a kind of flow cannot do without, and what its absence says.
pub(super) fn required_flow_key(kind: FlowKind) -> Option<(&'static str, &'static str)> {
    match kind {
        FlowKind::Tcp | FlowKind::Ping => None,
        FlowKind::Udp => Some(("rate", "missing: a UDP flow needs a rate")),
        FlowKind::Pantheon => Some((
            "wrapper",
            "missing: the scheme's wrapper (e.g. pantheon/src/wrappers/bbr.py)",
        )),
        FlowKind::Command => Some(("command", "missing: the command to run (with sh -c)")),
    }
}

/// Which of the keys only some kinds of flow take `flow` gives.
pub(super) fn given_flow_keys(flow: &FlowSection) -> [(&'static str, bool); 11] {
    [
        ("cc", flow.cc.is_some()),
        ("bytes", flow.bytes.is_some()),
        ("rate", flow.rate.is_some()),
        ("ecn", flow.ecn.is_some()),
        ("size", flow.size.is_some()),
        ("interval", flow.interval.is_some()),
        ("command", flow.command.is_some()),
        ("omit", flow.omit.is_some()),
        ("wrapper", flow.wrapper.is_some()),
        ("setup_time", flow.setup_time.is_some()),
        ("tos", flow.tos.is_some()),
    ]
}

/// A flow's kind-specific keys: a TCP flow's congestion control is the
/// kernel's, the key its kind needs is there, and no key belongs to
/// another kind.
pub(super) fn check_flow_keys(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
) -> Result<(), ExperimentError> {
    let source = context.source;
    if let (FlowKind::Tcp, Some(cc)) = (flow.kind, &flow.cc) {
        check_cc(context.controls, source, cc, &format!("{key}.cc"))?;
    }
    let given = given_flow_keys(flow);
    if let Some((required, missing)) = required_flow_key(flow.kind) {
        if !given.iter().any(|&(name, given)| given && name == required) {
            return Err(source.key(&format!("{key}.{required}"), missing));
        }
    }
    let allowed = flow_keys(flow.kind);
    for (name, given) in given {
        if given && !allowed.contains(&name) {
            return Err(source.key(
                &format!("{key}.{name}"),
                format!(
                    "does not apply to a {} flow (it takes: {})",
                    kind_name(flow.kind),
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A warning for each flow between two hosts of one side: it never
/// crosses the bottleneck.
pub(super) fn same_side_warnings(flows: &[FlowPlan], hosts: &[HostPlan]) -> Vec<String> {
    flows
        .iter()
        .filter_map(|f| {
            let (from, to) = (&hosts[f.from], &hosts[f.to?]);
            (from.side == to.side).then(|| {
                format!(
                    "flow {}: hosts {} and {} are both on the {} side, so it never crosses the bottleneck",
                    f.name,
                    from.name,
                    to.name,
                    side_name(from.side)
                )
            })
        })
        .collect()
}

pub(super) fn side_name(side: Side) -> &'static str {
    match side {
        Side::Left => "left",
        Side::Right => "right",
    }
}

/// Names become file and directory names.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 40
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(format!(
            "'{name}' is not a usable name: letters, digits, '-', '_' and '.', at most 40"
        ));
    }
    Ok(())
}

/// A TCP flow's `tos` key as the byte its sender sets: DSCP in the upper
/// six bits, the two ECN bits 0, since the sender's stack sets those.
pub(super) fn tos(value: Option<u32>) -> Result<u8, String> {
    let Some(value) = value else {
        return Ok(0);
    };
    let byte = u8::try_from(value)
        .map_err(|_| format!("{value} is not a TOS byte (0 to 255, e.g. 0x10 for DSCP 4)"))?;
    if byte & 0b11 != 0 {
        return Err(format!(
            "{value:#04x} sets ECN bits, which a TCP sender's stack sets itself: give the DSCP times 4 ({:#04x} for DSCP {})",
            byte & !0b11,
            byte >> 2
        ));
    }
    Ok(byte)
}
