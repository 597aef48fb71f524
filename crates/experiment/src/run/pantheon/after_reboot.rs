//! A scheme's `setup_after_reboot`, applied where its changes stay.
//!
//! Pantheon runs it once per boot, on the machine: bbr and vegas load
//! their kernel module, allow their congestion control and check the
//! default qdisc (`helpers/kernel_ctl`). emu runs it in each run, in the
//! flow's receiver's and sender's namespaces, before the first side
//! starts, with emu's `sudo`, `modprobe` and `sysctl` first on its PATH
//! (`pantheon/bin`): `sudo` runs the command (emu is root already);
//! `modprobe` loads nothing (a module is the machine's) and succeeds for
//! a module the kernel has; `sysctl` reads and sets the namespace's keys,
//! and a key the namespace lacks (net.core.default_qdisc) or the kernel
//! will not set from it (net.core.rmem_max, tcp_allowed_congestion_control)
//! is the machine's: said, left as it is, and the call fails. Its output
//! goes to `flows/NAME.SIDE.setup.{out,err}`.
//!
//! A module `tcp_NAME` where NAME is one of emu's BPF congestion controls
//! (`vegas`) counts as present: `modprobe` succeeds and names it, and emu
//! registers its own for the experiment, as it does for a flow's `cc`.
//!
//! Before any cell starts, each wrapper's `setup_after_reboot` runs once
//! in a scratch namespace ([`preflight`]): a kernel module it needs that
//! neither the kernel nor emu provides refuses the experiment (without
//! one, `iperf -Z NAME` runs the default congestion control under NAME);
//! any other failure is a warning, as Pantheon's own setup goes on past it.
//! Cost: a Python start per wrapper before the cells, and per run two
//! more before the scheme's first side (the flow's time runs meanwhile).

use crate::file::{FlowPlan, PantheonSide};
use crate::run::system::{self, CommandLine};
use report::experiments::results_dir;
use shells::netns::NetNs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a `setup_after_reboot` may take before it is stopped.
const LIMIT: Duration = Duration::from_secs(20);

/// The environment a wrapper of `flow` runs with: emu's tools first on
/// PATH, and the flow's own directory as Pantheon's base (its helpers'
/// scratch `tmp`), not the checkout.
pub fn environment(dir: &Path, flow: &FlowPlan) -> Vec<(String, String)> {
    scheme_environment(&base_dir(dir, flow))
}

/// Pantheon's base directory for `flow` in a run: `flows/NAME.pantheon`.
pub fn base_dir(dir: &Path, flow: &FlowPlan) -> PathBuf {
    dir.join(results_dir::FLOWS_DIR)
        .join(format!("{}.pantheon", flow.name))
}

fn scheme_environment(base: &Path) -> Vec<(String, String)> {
    let mut env = vec![
        ("EMU_PANTHEON_BASE".to_string(), base.display().to_string()),
        ("EMU_PANTHEON_PROVIDES".to_string(), provided_modules()),
    ];
    if let Ok(shim) = crate::run::wrappers::shim_dir() {
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        env.push((
            "PATH".to_string(),
            format!("{}:{path}", shim.join("bin").display()),
        ));
    }
    env
}

/// `WRAPPER setup_after_reboot` on each of `flow`'s two hosts: (host,
/// command), the receiver's first.
pub fn commands(flow: &FlowPlan, dir: &Path) -> Vec<(usize, CommandLine)> {
    let scheme = flow.pantheon.as_ref().expect("checked: a wrapper");
    let to = flow.to.expect("checked: a receiver");
    [
        (PantheonSide::Receiver, to),
        (PantheonSide::Sender, flow.from),
    ]
    .into_iter()
    .map(|(side, host)| {
        let file = |suffix: &str| {
            dir.join(results_dir::FLOWS_DIR).join(format!(
                "{}.{}.setup.{suffix}",
                flow.name,
                side.name()
            ))
        };
        (
            host,
            CommandLine {
                argv: argv(&scheme.wrapper),
                env: environment(dir, flow),
                stdout: file("out"),
                stderr: file("err"),
            },
        )
    })
    .collect()
}

fn argv(wrapper: &Path) -> Vec<String> {
    let mut argv = crate::run::wrappers::command(wrapper)
        .unwrap_or_else(|_| vec![wrapper.display().to_string()]);
    argv.push("setup_after_reboot".to_string());
    argv
}

/// Runs the setups (each in its namespace) together, each until it ends
/// or for [`LIMIT`]; how each ended is in its files.
pub async fn run(setups: Vec<(Arc<NetNs>, CommandLine)>) {
    let mut running = Vec::new();
    for (namespace, command) in &setups {
        if let Ok(child) = system::spawn_group(namespace, command) {
            running.push(child);
        }
    }
    for mut child in running {
        if tokio::time::timeout(LIMIT, child.wait()).await.is_err() {
            system::stop_group(&mut child).await;
        }
    }
}

/// What emu's `modprobe` may count as present beyond the kernel's: the
/// names of emu's BPF congestion controls, space-separated (`tcp_NAME`
/// asks for NAME).
fn provided_modules() -> String {
    endpoints::ENDPOINTS
        .iter()
        .map(|e| e.kernel_name)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the setups asked of the machine, learnt before any cell.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Preflight {
    /// A setup that failed otherwise than for a module, per scheme.
    pub warnings: Vec<String>,
    /// emu's congestion controls the setups loaded as kernel modules,
    /// which the experiment must register (`vegas` for `tcp_vegas`).
    pub congestion_controls: Vec<&'static str>,
}

/// Each wrapper's `setup_after_reboot` once in a scratch namespace: the
/// warnings and emu's congestion controls to register, or the refusal
/// naming each scheme that needs a kernel module neither this kernel nor
/// emu provides.
pub fn preflight(wrappers: &[&Path]) -> Result<Preflight, String> {
    if wrappers.is_empty() {
        return Ok(Preflight::default());
    }
    let scratch = std::env::temp_dir().join(format!("emu-preflight-{}", std::process::id()));
    let outcome = preflight_in(wrappers, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

fn preflight_in(wrappers: &[&Path], scratch: &Path) -> Result<Preflight, String> {
    let namespace = NetNs::create().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut outcome = Preflight::default();
    let mut refused = Vec::new();
    for (i, wrapper) in wrappers.iter().enumerate() {
        let modules = scratch.join(format!("{i}.refused"));
        let provided = scratch.join(format!("{i}.provided"));
        let (ok, said) = setup_once(
            &namespace,
            wrapper,
            &scratch.join(i.to_string()),
            &modules,
            &provided,
        )?;
        let scheme = super::scheme_of(wrapper);
        let provided = std::fs::read_to_string(&provided).unwrap_or_default();
        for name in provided.split_whitespace().filter_map(endpoints::find) {
            if !outcome.congestion_controls.contains(&name.name) {
                outcome.congestion_controls.push(name.name);
            }
        }
        let lacking = std::fs::read_to_string(&modules).unwrap_or_default();
        let lacking: Vec<&str> = lacking.split_whitespace().collect();
        if !lacking.is_empty() {
            refused.push(format!("{scheme} needs {}", lacking.join(" ")));
        } else if !ok {
            outcome.warnings.push(format!(
                "{scheme}: setup_after_reboot failed in a scratch namespace (runs go on, as Pantheon's setup does): {said}"
            ));
        }
    }
    if !refused.is_empty() {
        return Err(format!(
            "schemes whose setup_after_reboot needs a kernel module this kernel lacks: {}; emu loads no kernel modules (a module is the machine's, not a namespace's) and provides none of these as a BPF congestion control: load them (modprobe) or leave those schemes out",
            refused.join("; ")
        ));
    }
    Ok(outcome)
}

/// One `setup_after_reboot` in `namespace`: whether it succeeded, and the
/// last line of its error output.
fn setup_once(
    namespace: &NetNs,
    wrapper: &Path,
    base: &Path,
    modules: &Path,
    provided: &Path,
) -> Result<(bool, String), String> {
    let argv = argv(wrapper);
    let mut env = scheme_environment(base);
    env.push((
        "EMU_PANTHEON_REFUSED".to_string(),
        modules.display().to_string(),
    ));
    env.push((
        "EMU_PANTHEON_PROVIDED".to_string(),
        provided.display().to_string(),
    ));
    let output = system::run_in_for(namespace, &argv, &env, LIMIT)
        .map_err(|e| format!("running {} setup_after_reboot: {e}", wrapper.display()))?;
    let text = String::from_utf8_lossy(&output.stderr);
    // emu's own tools say why; else the wrapper's last word.
    let last = text
        .lines()
        .rev()
        .find(|l| l.starts_with("emu: "))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()));
    Ok((
        output.status.success(),
        last.unwrap_or("no error output").trim().to_string(),
    ))
}
