//! emu's congestion controls loaded for a session of runs: an
//! experiment's (the names its plans give) or a chain of shells' command
//! (the names `--cc` gives, each with the settings written after it).
//!
//! Both load once, before anything is built, and say which
//! implementation of each runs; everything loaded stays until the value
//! returned here drops, which the kernel follows by unregistering it, on
//! an error's early return as on a clean end. Cost: one load of the BPF
//! object per session; nothing per packet.

use crate::error::Result;
use crate::hosts;
use crate::parameters::{self, Settings};
use crate::registry::Loaded;
use std::sync::{Arc, Mutex};

/// The sysctl of a namespace's default congestion control.
pub const DEFAULT_KEY: &str = "net.ipv4.tcp_congestion_control";

/// Loads `names` (nothing when empty) and hands `say` one line per
/// congestion control, for the user: which implementation of it runs.
pub fn load(names: &[&str], mut say: impl FnMut(&str)) -> Result<Option<Loaded>> {
    if names.is_empty() {
        return Ok(None);
    }
    let loaded = Loaded::load(names)?;
    for line in loaded.describe() {
        say(&line);
    }
    Ok(Some(loaded))
}

/// What a device of the command's is handed to, once its namespace is
/// built: the same shape as the shells' `DeviceHelpers`.
pub type DeviceHelpers = Arc<dyn Fn(&str) -> std::result::Result<(), String> + Send + Sync>;

/// Why the command's congestion controls could not be readied: the
/// settings written after a name, or loading what the names ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    Settings(String),
    Loading(String),
}

/// emu's congestion controls for a chain of shells' command, loaded for
/// the length of the run.
pub struct ForCommand {
    /// Held until the run ends; None when no choice was emu's.
    pub loaded: Option<Loaded>,
    /// Attaches the helpers to a device and hands the choices' settings to
    /// the command's connections (its namespace's, never the host's).
    pub helpers: Option<DeviceHelpers>,
}

impl ForCommand {
    /// Loads emu's congestion controls among `choices` (the kernel's own
    /// need no loading), saying through `say` which implementation of
    /// each runs. `cookie_here` reads the calling thread's network
    /// namespace's cookie, to tell the command's namespace from the host's.
    pub fn load(
        choices: &[String],
        cookie_here: fn() -> std::io::Result<u64>,
        say: impl FnMut(&str),
    ) -> std::result::Result<ForCommand, CommandError> {
        let mut names = Vec::new();
        let mut settings = Vec::new();
        for choice in choices {
            let (name, given) = parameters::split(choice);
            let Some(endpoint) = crate::find(name) else {
                continue;
            };
            names.push(endpoint.name);
            if !given.is_empty() {
                settings.push(parameters::parse(endpoint, given).map_err(CommandError::Settings)?);
            }
        }
        let loading = |e: crate::EndpointError| CommandError::Loading(e.to_string());
        let Some(loaded) = load(&names, say).map_err(loading)? else {
            return Ok(ForCommand {
                loaded: None,
                helpers: None,
            });
        };
        let helpers = loaded.helpers().map_err(loading)?;
        let applied = Mutex::new(loaded.settings().map_err(loading)?);
        let host = cookie_here()
            .map_err(|e| CommandError::Loading(format!("reading this namespace's cookie: {e}")))?;
        let hand_over = move |device: &str| -> std::result::Result<(), String> {
            helpers.attach(device).map_err(|e| e.to_string())?;
            let here = cookie_here()
                .map_err(|e| format!("reading the command's namespace's cookie: {e}"))?;
            hand_settings(&applied, host, here, &settings)
        };
        Ok(ForCommand {
            loaded: Some(loaded),
            helpers: Some(Arc::new(hand_over)),
        })
    }

    /// The command namespace's sysctls: its default congestion control
    /// (`default`, as sockets name it), and what emu's own need where
    /// they run when any is loaded ([`hosts::NAMESPACE`]; an experiment's
    /// hosts get the same).
    pub fn sysctls(&self, default: String) -> Vec<(String, String)> {
        let mut sysctls = vec![(DEFAULT_KEY.to_string(), default)];
        if self.helpers.is_some() {
            sysctls.extend(
                hosts::NAMESPACE
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
        }
        sysctls
    }
}

/// Hands `settings` to the connections of namespace `here`, unless it is
/// the host's: the command's settings never reach the host's sockets.
fn hand_settings(
    applied: &Mutex<crate::per_flow::Applied>,
    host: u64,
    here: u64,
    settings: &[Settings],
) -> std::result::Result<(), String> {
    if here == host || settings.is_empty() {
        return Ok(());
    }
    let mut applied = applied
        .lock()
        .map_err(|_| "the settings' lock".to_string())?;
    for s in settings {
        applied.add(here, 0, s).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_cookie() -> std::io::Result<u64> {
        Err(std::io::Error::other("not asked"))
    }

    /// The kernel's own congestion controls load nothing, and the command
    /// then gets no emu sysctl beyond its default.
    #[test]
    fn the_kernels_own_load_nothing() {
        let mut said = Vec::new();
        let command = ForCommand::load(&["cubic".into(), "reno".into()], no_cookie, |l| {
            said.push(l.to_string())
        })
        .unwrap();
        assert!(command.loaded.is_none() && command.helpers.is_none());
        assert!(said.is_empty(), "{said:?}");
        assert_eq!(
            command.sysctls("cubic".into()),
            [(DEFAULT_KEY.to_string(), "cubic".to_string())]
        );
    }

    /// Settings an emu congestion control does not take are refused
    /// before anything loads, as the settings' error.
    #[test]
    fn bad_settings_are_refused_before_loading() {
        let refused = ForCommand::load(&["prague no_such_key=1".into()], no_cookie, |_| {});
        assert!(
            matches!(refused, Err(CommandError::Settings(_))),
            "{:?}",
            refused.as_ref().err()
        );
    }
}
