//! `emu cc`: the congestion controls usable here, the kernel's and emu's
//! own, and which of emu's are loaded now.

use super::output::UsageError;
use endpoints::{kernel, registry, ENDPOINTS};

/// `emu cc NAME`: one of emu's congestion controls and its settings.
pub fn one(name: &str) -> Result<String, UsageError> {
    match endpoints::find(name) {
        Some(endpoint) => Ok(endpoints::parameters::describe(endpoint)),
        None => Err(UsageError(format!(
            "cc: '{name}' is not one of emu's congestion controls ({}); `emu cc` lists every one usable here",
            ENDPOINTS.map(|e| e.name).join(", ")
        ))),
    }
}

pub fn text() -> String {
    let available = kernel::available();
    let default = kernel::default_congestion_control();
    // Listing BPF links needs root; without it, emu's registrations look
    // like the kernel's.
    let by_emu = kernel::may_load().then(registry::registered_by_emu);
    // Keyed by the names users write; the kernel lists its own names.
    let is_emus = |kernel_name: &str| {
        endpoints::find(kernel_name)
            .is_some_and(|e| by_emu.as_ref().is_some_and(|r| r.contains_key(e.name)))
    };
    let mut text = String::from(
        "Congestion controls usable here (a socket picks one by name: iperf3 -C NAME;\n\
         an experiment's flow or host: cc = \"NAME\"; shells: emu --cc NAME, the command's default):\n\n\
         The kernel's:\n",
    );
    for name in available.iter().filter(|n| !is_emus(n)) {
        let note = if *name == default {
            " (the default)"
        } else {
            ""
        };
        text += &format!("  {name}{note}\n");
    }
    let btf = std::path::Path::new(kernel::BTF).exists();
    text += "\nemu's own, BPF programs loaded for a run that names them \
             (emu cc NAME: the settings each takes):\n";
    for endpoint in &ENDPOINTS {
        let state = if is_emus(endpoint.kernel_name) {
            "loaded now, by an emu that is running"
        } else if available.iter().any(|a| a == endpoint.kernel_name) {
            if by_emu.is_some() {
                "the kernel has its own: that one runs"
            } else {
                "loaded now (by emu, or the kernel's own: run as root to tell)"
            }
        } else if !btf {
            "cannot load here: this kernel has no BTF"
        } else {
            "not loaded"
        };
        let name = if endpoint.kernel_name == endpoint.name {
            endpoint.name.to_string()
        } else {
            format!(
                "{} (sockets choose it as {})",
                endpoint.name, endpoint.kernel_name
            )
        };
        text += &format!("  {name}\n      {}\n      [{state}]\n", endpoint.summary);
    }
    text
}
