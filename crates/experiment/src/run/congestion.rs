//! emu's own congestion controls in an experiment: those a plan may name,
//! loading the ones it does for the session's runs, and attaching the
//! hosts' helpers in each run.
//!
//! Both ends of a flow get the flow's congestion control: its sender by
//! name, its receiver because iperf3's server takes the client's choice
//! for its side of the connection (a DCTCP-style receiver's echo is part
//! of the algorithm). A host's `cc` becomes its namespace's default, for
//! every socket in it.

use crate::file::ExperimentError;
use crate::file::{CongestionControls, Plan};
use crate::results::measured::FlowResult;
use endpoints::{Loaded, ENDPOINTS};
use shells::dumbbell::{Host, HOST_DEVICE};

/// `controls` with emu's congestion controls added: a plan may name them,
/// and they are loaded before the runs (registered so that a namespace
/// may take them as its default). One the kernel has itself stays the
/// kernel's, and is known by emu's spelling too (`cubic-sce` for a
/// `cubic_sce` another emu has registered).
pub fn with_emus(mut controls: CongestionControls) -> CongestionControls {
    for endpoint in &ENDPOINTS {
        if controls.available.iter().any(|a| a == endpoint.kernel_name) {
            let allowed = controls.allowed.iter().any(|a| a == endpoint.kernel_name);
            if !controls.available.iter().any(|a| a == endpoint.name) {
                controls.available.push(endpoint.name.to_string());
                if allowed {
                    controls.allowed.push(endpoint.name.to_string());
                }
            }
            continue;
        }
        for name in [endpoint.name, endpoint.kernel_name] {
            if !controls.available.iter().any(|a| a == name) {
                controls.available.push(name.to_string());
                controls.allowed.push(name.to_string());
            }
        }
    }
    controls
}

/// Writes emu's congestion controls in `plan` by the names the kernel
/// knows them by (`reno-sce` becomes `reno_sce`), as sockets and sysctls
/// take them.
pub fn to_kernel_names(plan: &mut Plan) {
    let rename = |name: &mut String| {
        if let Some(endpoint) = endpoints::find(name) {
            *name = endpoint.kernel_name.to_string();
        }
    };
    for host in &mut plan.hosts {
        for (key, value) in &mut host.sysctls {
            if key == endpoints::sessions::DEFAULT_KEY {
                rename(value);
            }
        }
    }
    for flow in &mut plan.flows {
        if let Some(cc) = &mut flow.cc {
            rename(cc);
        }
    }
}

/// emu's congestion controls that `plans` name, as hosts' defaults or for
/// flows.
pub fn named<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for plan in plans {
        let defaults = plan.hosts.iter().flat_map(|h| {
            h.sysctls
                .iter()
                .filter(|(key, _)| key == endpoints::sessions::DEFAULT_KEY)
                .map(|(_, value)| value.as_str())
        });
        let flows = plan.flows.iter().filter_map(|f| f.cc.as_deref());
        for name in defaults.chain(flows) {
            if let Some(endpoint) = endpoints::find(name) {
                if !names.contains(&endpoint.name) {
                    names.push(endpoint.name);
                }
            }
        }
    }
    names
}

/// Loads `names` for the session (nothing when empty) and says on stderr
/// which implementation of each runs.
pub fn load(names: &[&str]) -> Result<Option<Loaded>, ExperimentError> {
    endpoints::sessions::load(names, |line| eprintln!("emu run: {line}"))
        .map_err(|e| ExperimentError(e.to_string()))
}

/// Host `index`'s sysctls, with what emu's congestion controls need where
/// they run (`loaded`): the settings of `endpoints::hosts::NAMESPACE`,
/// ECN asked for by the hosts that send with one of emu's that needs it (iperf3 picks a
/// connection's congestion control after connecting, so its SYN asks for
/// ECN only when the host does), each unless the host sets it itself.
pub fn host_sysctls(plan: &Plan, index: usize, loaded: bool) -> Vec<(String, String)> {
    let mut sysctls = plan.hosts[index].sysctls.clone();
    if !loaded {
        return sysctls;
    }
    let sends_with_emus = plan.flows.iter().any(|f| {
        f.from == index
            && f.cc
                .as_deref()
                .and_then(endpoints::find)
                .is_some_and(|e| e.marking.needs_ecn())
    });
    let needed = endpoints::hosts::NAMESPACE
        .iter()
        .filter(|(key, _)| sends_with_emus || *key != endpoints::hosts::ASK_FOR_ECN.0);
    for (key, value) in needed {
        if !sysctls.iter().any(|(k, _)| k == key) {
            sysctls.push((key.to_string(), value.to_string()));
        }
    }
    sysctls
}

/// Attaches the helpers to every host of a run.
pub fn attach(loaded: &Loaded, hosts: &[Host]) -> Result<(), String> {
    let helpers = loaded.helpers().map_err(|e| e.to_string())?;
    for host in hosts {
        host.namespace
            .run(|| {
                helpers
                    .attach(HOST_DEVICE)
                    .map_err(|e| shells::ShellError::new(e.to_string()))
            })
            .map_err(|e| format!("host {}: {e}", host.name))?;
    }
    Ok(())
}

/// Hands each flow's settings (the references' module parameters) to its
/// connections, and each host's to the rest of its namespace's, for the
/// length of the run: the entries go when the returned value drops.
pub fn apply(
    loaded: &Loaded,
    plan: &Plan,
    hosts: &[Host],
) -> Result<endpoints::per_flow::Applied, String> {
    let mut applied = loaded.settings().map_err(|e| e.to_string())?;
    let cookie = |index: usize| {
        hosts[index]
            .namespace
            .cookie()
            .map_err(|e| format!("host {}: {e}", hosts[index].name))
    };
    for (index, host) in plan.hosts.iter().enumerate() {
        if let Some(settings) = &host.cc_settings {
            applied
                .add(cookie(index)?, 0, settings)
                .map_err(|e| format!("host {}: {e}", host.name))?;
        }
    }
    for flow in &plan.flows {
        if let Some(settings) = &flow.cc_settings {
            applied
                .add(cookie(flow.from)?, flow.port, settings)
                .map_err(|e| format!("flow {}: {e}", flow.name))?;
        }
    }
    Ok(applied)
}

/// Adds to a flow's result what its connection's counts say that its
/// congestion control makes meaningful: the SCE feedback its sender saw
/// (emu's SCE senders), and what TCP Prague's classic-ECN detection
/// concluded (where its socket ran it); and the settings it ran with.
pub fn add_counts(
    result: &mut FlowResult,
    flow: &crate::file::FlowPlan,
    counts: Option<&endpoints::feedback::SceCounts>,
) {
    let endpoint = flow.cc.as_deref().and_then(endpoints::find);
    if let Some(settings) = &flow.cc_settings {
        result.cc_settings = settings
            .given
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
    }
    let Some(counts) = counts else { return };
    if endpoint.is_some_and(|e| e.marking == endpoints::Marking::Sce) {
        result.esce_acked_bytes = Some(counts.esce_acked_bytes);
    }
    // Only a socket that ran classic-ECN detection keeps an entry.
    if endpoint.is_some_and(|e| e.name == "prague") {
        result.classic_ecn = Some(crate::results::measured::ClassicEcn {
            score_max: counts.classic_ecn_max as f64 / f64::from(1u32 << 20),
            detected: counts.classic_ecn_max > endpoints::feedback::CLASSIC_ECN_SEEN,
        });
    }
}

/// Flows planned with one of emu's congestion controls that ran without
/// ECN: each then behaves as its fallback (TCP Prague and DCTCP hand the
/// socket to Reno, as their references do), which the figures alone
/// would not tell. `planned` pairs each flow's name with its planned
/// congestion control.
pub fn fallbacks<'a>(
    planned: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    flows: &[FlowResult],
) -> Vec<String> {
    planned
        .into_iter()
        .filter_map(|(name, cc)| {
            let endpoint = endpoints::find(cc?).filter(|e| e.marking.needs_ecn())?;
            let flow = flows.iter().find(|f| f.name == name)?;
            (flow.ecn == Some(false)).then(|| {
                format!(
                    "flow {name}: {} ran as {}: the connection did not negotiate ECN \
                     (give the receiving host tcp_ecn = 1 or 2)",
                    endpoint.name, endpoint.without_ecn
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emus_congestion_controls_join_the_kernels_once() {
        let kernel = CongestionControls {
            available: vec!["reno".into(), "cubic".into(), "dctcp".into()],
            allowed: vec!["reno".into(), "cubic".into()],
        };
        let controls = with_emus(kernel);
        for name in [
            "reno",
            "cubic",
            "dctcp",
            "prague",
            "reno-sce",
            "cubic-sce",
            "dctcp-sce",
        ] {
            assert_eq!(
                controls.available.iter().filter(|a| *a == name).count(),
                1,
                "{name}: {:?}",
                controls.available
            );
        }
        // The kernel's own DCTCP stays the kernel's: not made allowed.
        assert!(!controls.allowed.contains(&"dctcp".to_string()));
        assert!(controls.allowed.contains(&"prague".to_string()));
        // Both spellings of the SCE ones: as users write them, as the
        // kernel knows them.
        assert!(controls.available.contains(&"reno_sce".to_string()));
        assert!(controls.allowed.contains(&"cubic-sce".to_string()));
    }

    /// Registered already (by another emu, or by this one's previous
    /// experiment of a study), an SCE control is still taken by emu's
    /// spelling.
    #[test]
    fn a_registered_control_keeps_emus_spelling() {
        let kernel = CongestionControls {
            available: vec!["cubic".into(), "cubic_sce".into()],
            allowed: vec!["cubic".into(), "cubic_sce".into()],
        };
        let controls = with_emus(kernel);
        for name in ["cubic-sce", "cubic_sce"] {
            assert_eq!(controls.available.iter().filter(|a| *a == name).count(), 1);
            assert!(controls.allowed.iter().any(|a| a == name), "{name}");
        }
    }

    #[test]
    fn a_flow_without_ecn_under_an_ecn_congestion_control_is_said() {
        let flow = |name: &str, cc: &str, ecn: Option<bool>| FlowResult {
            name: name.into(),
            congestion_control: Some(cc.into()),
            ecn,
            ..FlowResult::default()
        };
        // Prague hands a socket without ECN to Reno: TCP_INFO says reno.
        let results = [
            flow("a", "reno", Some(false)),
            flow("b", "prague", Some(true)),
            flow("c", "cubic", Some(false)),
            flow("d", "prague", None),
        ];
        let said = fallbacks(
            [
                ("a", Some("prague")),
                ("b", Some("prague")),
                ("c", Some("cubic")),
                ("d", Some("prague")),
            ],
            &results,
        );
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("flow a: prague ran as Reno"),
            "{}",
            said[0]
        );
    }
}
