//! Pantheon's schemes beyond the command line that runs a wrapper
//! ([`crate::run::wrappers`]): what a scheme needs, asked before any cell
//! starts ([`deps`]), and its `setup_after_reboot`, run in the flow's two
//! namespaces and nowhere else ([`after_reboot`]).

pub mod after_reboot;
pub mod deps;

use crate::file::Plan;
use std::path::Path;

/// The distinct wrappers of `plans`, in the order they first appear.
pub fn wrappers<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Vec<&'a Path> {
    let mut seen: Vec<&Path> = Vec::new();
    for plan in plans {
        for scheme in plan.flows.iter().filter_map(|f| f.pantheon.as_ref()) {
            if !seen.contains(&scheme.wrapper.as_path()) {
                seen.push(&scheme.wrapper);
            }
        }
    }
    seen
}

/// A wrapper's scheme name, for messages: its file's stem.
pub fn scheme_of(wrapper: &Path) -> String {
    crate::results::schemes::scheme_name(&wrapper.display().to_string())
}
