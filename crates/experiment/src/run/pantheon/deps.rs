//! A scheme's dependencies, named before any cell starts.
//!
//! Each distinct wrapper is asked `WRAPPER deps`: the Debian packages
//! Pantheon's `setup.py --install-deps` installs for it. A package that
//! dpkg does not list as installed is missing; one message names every
//! scheme with a missing package and the `apt-get install` line that
//! installs them all. Without dpkg-query (not Debian or Ubuntu) nothing is
//! checked. Cost: a Python start per wrapper and a dpkg-query per package.

use crate::run::system;
use std::path::Path;

/// Refuses the experiment, naming each scheme whose dependencies are not
/// installed and what to install.
pub fn check(wrappers: &[&Path]) -> Result<(), String> {
    let mut missing = Vec::new();
    for wrapper in wrappers {
        let packages = listed(wrapper)?;
        let absent: Vec<String> = packages
            .into_iter()
            .filter(|p| installed(p) == Some(false))
            .collect();
        if !absent.is_empty() {
            missing.push((super::scheme_of(wrapper), absent));
        }
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(message(&missing)),
    }
}

/// The packages `WRAPPER deps` prints (none for a wrapper that says
/// nothing).
fn listed(wrapper: &Path) -> Result<Vec<String>, String> {
    let argv = crate::run::wrappers::command(wrapper)?;
    let output = system::ask(&argv, &["deps"])
        .map_err(|e| format!("running {} deps: {e}", wrapper.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} deps failed ({}): {}",
            wrapper.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(packages(&String::from_utf8_lossy(&output.stdout)))
}

/// The package names in a wrapper's `deps` answer.
pub fn packages(answer: &str) -> Vec<String> {
    answer.split_whitespace().map(String::from).collect()
}

/// Whether dpkg lists `package` as installed; None without dpkg-query.
fn installed(package: &str) -> Option<bool> {
    let output = system::ask(
        &["dpkg-query".to_string()],
        &["-W", "-f=${Status}", package],
    )
    .ok()?;
    Some(String::from_utf8_lossy(&output.stdout).contains("install ok installed"))
}

/// The refusal: each scheme and its missing packages, then the fix.
pub fn message(missing: &[(String, Vec<String>)]) -> String {
    let each: Vec<String> = missing
        .iter()
        .map(|(scheme, packages)| format!("{scheme} needs {}", packages.join(" ")))
        .collect();
    let mut all: Vec<&str> = missing
        .iter()
        .flat_map(|(_, p)| p.iter().map(String::as_str))
        .collect();
    all.sort_unstable();
    all.dedup();
    format!(
        "schemes whose dependencies (their wrapper's `deps`) are not installed: {}; install them (apt-get install {}) or leave those schemes out",
        each.join("; "),
        all.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_each_scheme_and_one_install_line() {
        assert_eq!(packages(" iperf\n"), ["iperf"]);
        assert!(packages("\n").is_empty());
        let text = message(&[
            ("cubic".into(), vec!["iperf".into()]),
            ("copa".into(), vec!["makepp".into(), "iperf".into()]),
        ]);
        assert!(
            text.contains("cubic needs iperf; copa needs makepp iperf"),
            "{text}"
        );
        assert!(text.contains("(apt-get install iperf makepp)"), "{text}");
    }
}
