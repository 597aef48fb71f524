//! An experiment file resolved into its plan, after the checks that
//! need more than one key (`checks`), with the machine's answers
//! (congestion controls, a Pantheon wrapper's `run_first`) given to it.

use super::checks::{
    cc_name, check_cc, check_flow_keys, check_name, check_run, same_side_warnings, tos,
};
use super::directions::direction;
use super::plan::*;
use super::schema::*;
use emu_core::time::{format_duration, NS_PER_SEC};
use emu_core::Nanos;
use std::net::Ipv4Addr;
use std::path::Path;
use toml::Spanned;

/// Checks what one key cannot (host names, congestion controls, queue
/// specs, traces) and resolves every default. `base` is the directory
/// relative paths are read from; `controls` the kernel's congestion
/// controls; `run_first` puts the question to a Pantheon wrapper
/// (`WRAPPER run_first`, `run::wrappers::run_first`). What the machine says is
/// given, asked before the checks, not inside them.
pub fn plan(
    experiment: &Experiment,
    source: &Source,
    default_name: &str,
    base: &Path,
    controls: &CongestionControls,
    run_first: &dyn Fn(&Path) -> Result<PantheonSide, String>,
) -> Result<Plan, ExperimentError> {
    let run = &experiment.run;
    check_run(run, source)?;
    let hosts = plan_hosts(experiment, source, base, controls)?;
    let bottlenecks = plan_bottlenecks(experiment, source, base)?;
    let context = FlowContext {
        experiment,
        source,
        base,
        controls,
        run_first,
        hosts: &hosts,
    };
    let mut flows = Vec::new();
    let mut port = FIRST_PORT;
    for (f, flow) in experiment.flows.iter().enumerate() {
        plan_flow(&context, f, flow, &mut flows, &mut port)?;
    }
    if flows.is_empty() {
        return Err(source.key("flows", "an experiment needs at least one flow"));
    }
    let warnings = same_side_warnings(&flows, &hosts);
    Ok(Plan {
        name: run.name.clone().unwrap_or_else(|| default_name.to_string()),
        run: run.clone(),
        hosts,
        bottlenecks,
        flows,
        warnings,
    })
}

/// The hosts, in the order of their names, each with its address (10.0.0.1
/// on), its sysctls and its side link.
fn plan_hosts(
    experiment: &Experiment,
    source: &Source,
    base: &Path,
    controls: &CongestionControls,
) -> Result<Vec<HostPlan>, ExperimentError> {
    if experiment.hosts.is_empty() {
        return Err(source.key("hosts", "an experiment needs at least two hosts"));
    }
    if experiment.hosts.len() > 250 {
        return Err(source.key("hosts", "at most 250 hosts"));
    }
    let mut hosts = Vec::new();
    for (index, (name, host)) in experiment.hosts.iter().enumerate() {
        check_name(name).map_err(|m| source.key(&format!("hosts.{name}"), m))?;
        let sysctls = host_sysctls(name, host, source, controls)?;
        let cc_settings = match &host.cc {
            Some(cc) => check_cc(controls, source, cc, &format!("hosts.{name}.cc"))?,
            None => None,
        };
        let shared = host.shared();
        let key = format!("hosts.{name}");
        hosts.push(HostPlan {
            name: name.clone(),
            side: host.side,
            address: Ipv4Addr::new(10, 0, 0, index as u8 + 1),
            sysctls,
            cc_settings,
            up: direction(&host.up, &shared, source, &format!("{key}.up"), base)?,
            down: direction(&host.down, &shared, source, &format!("{key}.down"), base)?,
        });
    }
    Ok(hosts)
}

/// The sysctls of host `name`'s namespace: its congestion control where
/// the kernel lets a namespace take it as default, `tcp_ecn`, and its own
/// `net.*` keys.
fn host_sysctls(
    name: &str,
    host: &HostSection,
    source: &Source,
    controls: &CongestionControls,
) -> Result<Vec<(String, String)>, ExperimentError> {
    let mut sysctls = Vec::new();
    if let Some(cc) = &host.cc {
        check_cc(controls, source, cc, &format!("hosts.{name}.cc"))?;
        // The host's TCP flows get it by name in any case; the
        // namespace's default is set where the kernel allows it.
        let name = cc_name(cc);
        if controls.allowed.contains(&name) {
            sysctls.push((endpoints::sessions::DEFAULT_KEY.to_string(), name));
        }
    }
    if let Some(ecn) = host.tcp_ecn {
        if ecn > 2 {
            return Err(source.key(&format!("hosts.{name}.tcp_ecn"), "must be 0, 1 or 2"));
        }
        sysctls.push(("net.ipv4.tcp_ecn".to_string(), ecn.to_string()));
    }
    for (key, value) in &host.sysctl {
        if !key.starts_with("net.") {
            return Err(source.key(
                &format!("hosts.{name}.sysctl"),
                format!("'{key}': only net.* sysctls belong to a host's namespace"),
            ));
        }
        sysctls.push((key.clone(), value.to_string()));
    }
    Ok(sysctls)
}

/// Each bottleneck's two directions, left to right and back.
fn plan_bottlenecks(
    experiment: &Experiment,
    source: &Source,
    base: &Path,
) -> Result<Vec<[DirectionPlan; 2]>, ExperimentError> {
    let mut bottlenecks = Vec::new();
    for (b, link) in experiment.bottleneck.iter().enumerate() {
        let shared = link.shared();
        let key = if experiment.bottleneck.len() == 1 {
            "bottleneck".to_string()
        } else {
            format!("bottleneck.{b}")
        };
        bottlenecks.push([
            direction(
                &link.forward,
                &shared,
                source,
                &format!("{key}.forward"),
                base,
            )?,
            direction(
                &link.reverse,
                &shared,
                source,
                &format!("{key}.reverse"),
                base,
            )?,
        ]);
    }
    Ok(bottlenecks)
}

/// Flow `f` of the file, checked, as `count` plans with their ports.
fn plan_flow(
    context: &FlowContext,
    f: usize,
    flow: &FlowSection,
    flows: &mut Vec<FlowPlan>,
    port: &mut u16,
) -> Result<(), ExperimentError> {
    let source = context.source;
    let key = format!("flows.{f}");
    let (from, to) = flow_ends(context, flow, &key)?;
    check_flow_keys(context, flow, &key)?;
    let duration = flow_duration(&context.experiment.run, source, flow, &key)?;
    let omit = flow.omit.map_or(0, |o| o.0);
    if !omit.is_multiple_of(NS_PER_SEC) || omit + NS_PER_SEC > duration {
        return Err(source.key(
            &format!("{key}.omit"),
            "whole seconds, at least one second shorter than the flow",
        ));
    }
    if flow.count == 0 {
        return Err(source.key(&format!("{key}.count"), "must be at least 1"));
    }
    let pantheon = plan_pantheon(context, flow, &key, duration)?;
    let tos = tos(flow.tos).map_err(|m| source.key(&format!("{key}.tos"), m))?;
    let base_name = flow_name(context, f, flow, (from, to), &key)?;
    let host_cc = context.experiment.hosts.iter().nth(from);
    let (cc, cc_key) = match (&flow.cc, host_cc) {
        (Some(cc), _) => (Some(cc), format!("{key}.cc")),
        (None, Some((host, section))) => (section.cc.as_ref(), format!("hosts.{host}.cc")),
        (None, None) => (None, String::new()),
    };
    let cc_settings = match (flow.kind, cc) {
        (FlowKind::Tcp, Some(cc)) => check_cc(context.controls, source, cc, &cc_key)?,
        _ => None,
    };
    for copy in 0..flow.count {
        let name = if flow.count == 1 {
            base_name.clone()
        } else {
            format!("{base_name}.{copy}")
        };
        if flows.iter().any(|p: &FlowPlan| p.name == name) {
            return Err(source.key(
                &format!("{key}.name"),
                format!("two flows are named '{name}'"),
            ));
        }
        flows.push(FlowPlan {
            name,
            kind: flow.kind,
            from,
            to,
            cc: cc.map(cc_name),
            cc_settings: cc_settings.clone(),
            rate: flow.rate,
            ecn: flow.ecn.unwrap_or_default(),
            tos,
            size: flow.size.unwrap_or(1200),
            interval: flow.interval.map(|i| i.0).unwrap_or(100_000_000),
            command: flow.command.clone(),
            pantheon: pantheon.clone(),
            start: flow.start.0,
            duration,
            bytes: flow.bytes.map(|b| b.0),
            omit,
            port: *port,
        });
        *port = port
            .checked_add(1)
            .ok_or_else(|| source.key("flows", "too many flows"))?;
    }
    Ok(())
}

/// Flow `f`'s name: the file's, checked, or one made of its index, kind
/// and hosts (`0-tcp-a-b`); copies of a `count` add `.N` to it.
fn flow_name(
    context: &FlowContext,
    f: usize,
    flow: &FlowSection,
    (from, to): (usize, Option<usize>),
    key: &str,
) -> Result<String, ExperimentError> {
    let hosts = context.hosts;
    Ok(match &flow.name {
        Some(name) => {
            check_name(name).map_err(|m| context.source.key(&format!("{key}.name"), m))?;
            name.clone()
        }
        None => {
            let to = to
                .map(|t| format!("-{}", hosts[t].name))
                .unwrap_or_default();
            format!("{f}-{}-{}{to}", kind_name(flow.kind), hosts[from].name)
        }
    })
}

/// The hosts a flow goes from and to (a command flow may have no `to`).
fn flow_ends(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
) -> Result<(usize, Option<usize>), ExperimentError> {
    let (experiment, source) = (context.experiment, context.source);
    let host_index = |name: &Spanned<String>, key: &str| -> Result<usize, ExperimentError> {
        experiment
            .hosts
            .keys()
            .position(|h| h == name.get_ref())
            .ok_or_else(|| {
                source.at(
                    name,
                    key,
                    format!(
                        "no host named '{}' (hosts: {})",
                        name.get_ref(),
                        experiment
                            .hosts
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    };
    let from = host_index(&flow.from, &format!("{key}.from"))?;
    let to = match &flow.to {
        Some(to) => Some(host_index(to, &format!("{key}.to"))?),
        None if flow.kind == FlowKind::Command => None,
        None => return Err(source.key(&format!("{key}.to"), "missing: the receiving host")),
    };
    if to == Some(from) {
        return Err(source.key(
            &format!("{key}.to"),
            "a flow's ends must be different hosts",
        ));
    }
    Ok((from, to))
}

/// How long a flow runs: its own duration, or to the run's end from its
/// start; at least 1s unless it is a command or sends a number of bytes.
fn flow_duration(
    run: &RunSection,
    source: &Source,
    flow: &FlowSection,
    key: &str,
) -> Result<Nanos, ExperimentError> {
    if flow.start.0 >= run.duration.0 {
        return Err(source.key(&format!("{key}.start"), "starts after the run ends"));
    }
    let duration = flow
        .duration
        .map(|d| d.0)
        .unwrap_or(run.duration.0 - flow.start.0);
    if duration < NS_PER_SEC && flow.kind != FlowKind::Command && flow.bytes.is_none() {
        // Without a duration of its own, the flow runs to the run's
        // end: the run's duration (or the flow's start) is at fault.
        return Err(match flow.duration {
            Some(_) => source.key(&format!("{key}.duration"), "must be at least 1s"),
            None => source.key(
                "run.duration",
                format!(
                    "leaves {key}, which runs to the end from its start at {}, {} where \
                     a flow needs at least 1s (a bare number is milliseconds)",
                    format_duration(flow.start.0),
                    format_duration(duration)
                ),
            ),
        });
    }
    Ok(duration)
}

/// A Pantheon flow's wrapper, the side it says runs first, and the time
/// the other side waits.
fn plan_pantheon(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
    duration: Nanos,
) -> Result<Option<PantheonPlan>, ExperimentError> {
    let Some(wrapper) = &flow.wrapper else {
        return Ok(None);
    };
    let source = context.source;
    let setup_time = flow.setup_time.map_or(3 * NS_PER_SEC, |t| t.0);
    if setup_time + NS_PER_SEC > duration {
        return Err(source.key(
            &format!("{key}.setup_time"),
            "must leave the flow at least 1s after it",
        ));
    }
    let path = context.base.join(wrapper.get_ref());
    let first =
        (context.run_first)(&path).map_err(|e| source.at(wrapper, &format!("{key}.wrapper"), e))?;
    Ok(Some(PantheonPlan {
        wrapper: path,
        first,
        setup_time,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use link::Server;

    fn available() -> CongestionControls {
        CongestionControls {
            available: ["reno", "cubic", "bbr"].map(String::from).to_vec(),
            allowed: ["reno", "bbr"].map(String::from).to_vec(),
        }
    }

    fn plan_of(text: &str) -> Result<Plan, ExperimentError> {
        plan_given(text, &available())
    }

    fn plan_given(text: &str, controls: &CongestionControls) -> Result<Plan, ExperimentError> {
        let source = Source {
            file: "x.toml",
            text,
        };
        let experiment = parse(&source)?;
        plan(
            &experiment,
            &source,
            "x",
            Path::new("."),
            controls,
            &crate::run::wrappers::run_first,
        )
    }

    const TWO_HOSTS: &str = r#"
[hosts.a]
side = "left"
delay = "10ms"
up = { delay = "5ms" }

[hosts.b]
side = "right"
tcp_ecn = 1

[bottleneck]
rate = "50mbit"
queue = "droptail packets 100"
reverse = { rate = "10mbit" }
"#;

    #[test]
    fn defaults_and_overrides_resolve_per_direction() {
        let plan = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncount = 2\n"
        ))
        .unwrap();
        assert_eq!(plan.name, "x");
        assert_eq!(plan.run.duration.0, 10 * NS_PER_SEC);
        assert_eq!(plan.hosts[0].up.delay, 5_000_000);
        assert_eq!(plan.hosts[0].down.delay, 10_000_000);
        assert_eq!(plan.hosts[1].address, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(
            plan.hosts[1].sysctls,
            vec![("net.ipv4.tcp_ecn".into(), "1".into())]
        );
        let [forward, reverse] = &plan.bottlenecks[0];
        assert!(matches!(forward.server, Server::Rate(r) if r.bits_per_sec() == 50_000_000));
        assert!(matches!(reverse.server, Server::Rate(r) if r.bits_per_sec() == 10_000_000));
        assert_eq!(
            reverse.queue,
            aqm::QueueSpec::parse("droptail packets 100").unwrap()
        );
        assert_eq!(plan.flows.len(), 2);
        assert_eq!(plan.flows[0].name, "0-tcp-a-b.0");
        assert_eq!(
            (plan.flows[0].port, plan.flows[1].port),
            (FIRST_PORT, FIRST_PORT + 1)
        );
        assert_eq!(plan.flows[1].duration, 10 * NS_PER_SEC);
    }

    /// The fabric's slack is the shells' by default, and `[run]` sets it.
    #[test]
    fn the_runs_slack_defaults_to_the_shells_and_can_be_set() {
        let flows = "\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n";
        let plan = plan_of(&format!("{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, shells::DEFAULT_SLACK);
        let plan = plan_of(&format!("[run]\nslack = \"0us\"\n{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, 0);
        let plan = plan_of(&format!("[run]\nslack = \"5us\"\n{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, 5_000);
    }

    /// A namespace other than the first may only default to an allowed
    /// congestion control; the host's flows get any other by name.
    #[test]
    fn a_hosts_congestion_control_reaches_its_flows() {
        let text = TWO_HOSTS.replace("side = \"left\"", "side = \"left\"\ncc = \"cubic\"");
        let plan = plan_of(&format!("{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n")).unwrap();
        assert!(
            plan.hosts[0].sysctls.is_empty(),
            "cubic is not allowed as a default"
        );
        assert_eq!(plan.flows[0].cc.as_deref(), Some("cubic"));
        let text = TWO_HOSTS.replace("side = \"left\"", "side = \"left\"\ncc = \"reno\"");
        let plan = plan_of(&format!(
            "{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"bbr\"\n"
        ))
        .unwrap();
        assert_eq!(
            plan.hosts[0].sysctls,
            vec![("net.ipv4.tcp_congestion_control".into(), "reno".into())]
        );
        assert_eq!(plan.flows[0].cc.as_deref(), Some("bbr"));
    }

    /// Settings after one of emu's congestion controls reach the flow (and
    /// a host's reach the flows that name none), the name alone goes to
    /// sockets and sysctls; a bad setting, or settings of a kernel's
    /// congestion control, are refused where they are written.
    #[test]
    fn a_congestion_controls_settings_reach_its_flow() {
        let controls = crate::run::congestion::with_emus(available());
        let plan_with = |text: &str| plan_given(text, &controls);
        let flow = |cc: &str| format!("[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"{cc}\"\n");
        let plan = plan_with(&format!(
            "{TWO_HOSTS}\n{}",
            flow("prague  ecn_fallback=1 rtt_target=10ms")
        ))
        .unwrap();
        assert_eq!(plan.flows[0].cc.as_deref(), Some("prague"));
        let settings = plan.flows[0].cc_settings.as_ref().unwrap();
        assert_eq!(settings.get("ecn_fallback"), Some(1));
        assert_eq!(settings.get("rtt_target"), Some(10_000));

        let text = TWO_HOSTS.replace(
            "side = \"left\"",
            "side = \"left\"\ncc = \"dctcp shift_g=2\"",
        );
        let plan = plan_with(&format!("{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n")).unwrap();
        assert_eq!(plan.flows[0].cc.as_deref(), Some("dctcp"));
        assert_eq!(
            plan.flows[0].cc_settings.as_ref().unwrap().get("shift_g"),
            Some(2)
        );
        assert_eq!(
            plan.hosts[0].cc_settings.as_ref().unwrap().get("shift_g"),
            Some(2)
        );
        assert_eq!(
            plan.hosts[0].sysctls,
            vec![("net.ipv4.tcp_congestion_control".into(), "dctcp".into())]
        );

        let error = plan_with(&format!("{TWO_HOSTS}\n{}", flow("prague ecn_fallback=4")))
            .unwrap_err()
            .0;
        assert!(
            error.contains("flows.0.cc") && error.contains("ecn_fallback=4"),
            "{error}"
        );
        let error = plan_with(&format!("{TWO_HOSTS}\n{}", flow("cubic beta=700")))
            .unwrap_err()
            .0;
        assert!(error.contains("cubic is the kernel's"), "{error}");
        assert!(error.contains("dctcp, prague"), "{error}");
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let error = plan_of(&TWO_HOSTS.replace("tcp_ecn = 1", "tcp_ecm = 1"))
            .unwrap_err()
            .0;
        assert!(error.contains("line 9"), "{error}");
        assert!(error.contains("tcp_ecm"), "{error}");
    }

    #[test]
    fn a_missing_congestion_control_lists_the_available_ones() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"westwood\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(error.contains("line 19"), "{error}");
        assert!(error.contains("flows.0.cc"), "{error}");
        assert!(error.contains("available: reno, cubic, bbr"), "{error}");
        // An empty name is said to be empty, with no module to load.
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("is empty") && !error.contains("modprobe"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_host_and_a_bad_queue_are_reported_where_they_are() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"c\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("line 18") && error.contains("no host named 'c'"),
            "{error}"
        );
        let error = plan_of(&format!(
            "{}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n",
            TWO_HOSTS.replace("droptail packets 100", "droptail pakets 100")
        ))
        .unwrap_err()
        .0;
        assert!(error.contains("bottleneck.forward.queue"), "{error}");
        assert!(error.contains("line 13"), "{error}");
    }

    /// A flow between two hosts of one side runs, but never crosses the
    /// bottleneck: the plan says so.
    #[test]
    fn a_flow_that_never_crosses_the_bottleneck_is_warned_of() {
        let across = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n"
        ))
        .unwrap();
        assert!(across.warnings.is_empty(), "{:?}", across.warnings);
        let text = format!(
            "{TWO_HOSTS}\n[hosts.c]\nside = \"left\"\n[[flows]]\nname = \"side\"\nfrom = \"a\"\nto = \"c\"\n"
        );
        let beside = plan_of(&text).unwrap();
        assert_eq!(beside.warnings.len(), 1);
        let warning = &beside.warnings[0];
        assert!(
            warning.contains("flow side") && warning.contains("both on the left"),
            "{warning}"
        );
    }

    /// A flow too short is blamed on the key that made it so: its own
    /// duration, or else the run's (a bare `duration = 2` is 2 ms).
    #[test]
    fn a_flow_too_short_names_the_duration_at_fault() {
        let flows = "\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n";
        let err = plan_of(&format!("[run]\nduration = 2\n{TWO_HOSTS}{flows}")).unwrap_err();
        assert!(
            err.0.contains("key run.duration") && err.0.contains("2 ms"),
            "{err}"
        );
        let own = format!("{TWO_HOSTS}{flows}duration = \"500ms\"\n");
        let err = plan_of(&own).unwrap_err();
        assert!(err.0.contains("key flows.0.duration"), "{err}");
    }

    #[test]
    fn keys_of_another_kind_of_flow_are_refused() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\nrate = \"1mbit\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("flows.0.rate") && error.contains("tcp flow"),
            "{error}"
        );
    }

    #[test]
    fn bottlenecks_in_series_are_an_array_of_tables() {
        let text = TWO_HOSTS.replace(
            "[bottleneck]\nrate = \"50mbit\"\nqueue = \"droptail packets 100\"\nreverse = { rate = \"10mbit\" }",
            "[[bottleneck]]\nrate = \"50mbit\"\n[[bottleneck]]\ndelay = \"3ms\"",
        );
        let plan = plan_of(&format!(
            "{text}\n[[flows]]\nkind = \"ping\"\nfrom = \"b\"\nto = \"a\"\n"
        ))
        .unwrap();
        assert_eq!(plan.bottlenecks.len(), 2);
        assert_eq!(plan.bottlenecks[1][1].delay, 3_000_000);
        assert_eq!(plan.flows[0].kind, FlowKind::Ping);
    }
}
