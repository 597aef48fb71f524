//! Source NAT so a shell's command reaches the host and, through it, the
//! host's networks. Each shell masquerades its inner address in the
//! namespace around it. Rules in the host's namespace carry the comment
//! `emu:<pid>`, so rules of an emu that was killed can be found and removed.

use crate::error::Result;
use crate::sys::netns::NetNs;
use crate::sys::sysctl;
use std::net::IpAddr;
use std::sync::Arc;

/// One masquerade rule, removed again when dropped.
pub struct NatRule {
    ns: Arc<NetNs>,
    program: &'static str,
    spec: Vec<String>,
}

/// The rule's words after the chain name, shared by add and delete.
pub fn masquerade_spec(source: IpAddr, owner: u32) -> (&'static str, Vec<String>) {
    let (program, length) = match source {
        IpAddr::V4(_) => ("iptables", 32),
        IpAddr::V6(_) => ("ip6tables", 128),
    };
    let spec = ["-t", "nat", "POSTROUTING", "-s"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("{source}/{length}"),
            "-m".into(),
            "comment".into(),
            "--comment".into(),
            format!("emu:{owner}"),
            "-j".into(),
            "MASQUERADE".into(),
        ])
        .collect();
    (program, spec)
}

/// iptables arguments for `action` (-A or -D) on a spec from [`masquerade_spec`].
pub fn with_action(spec: &[String], action: &str) -> Vec<String> {
    // spec = ["-t", "nat", CHAIN, ...rest]
    let mut args: Vec<String> = spec[..2].to_vec();
    args.push(action.to_string());
    args.extend_from_slice(&spec[2..]);
    args
}

impl NatRule {
    pub fn masquerade(ns: Arc<NetNs>, source: IpAddr) -> Result<NatRule> {
        let (program, spec) = masquerade_spec(source, std::process::id());
        let args = with_action(&spec, "-A");
        ns.exec(
            program,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        Ok(NatRule { ns, program, spec })
    }

    pub fn program(&self) -> &'static str {
        self.program
    }

    pub fn spec(&self) -> &[String] {
        &self.spec
    }
}

impl Drop for NatRule {
    fn drop(&mut self) {
        let args = with_action(&self.spec, "-D");
        let _ = self.ns.exec(
            self.program,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
}

/// Removes rules left by emu processes that no longer exist (killed with
/// SIGKILL before they, or their guardian, could clean up).
pub fn sweep_stale(ns: &NetNs) {
    for program in ["iptables", "ip6tables"] {
        let Ok(rules) = ns.query(program, &["-t", "nat", "-S", "POSTROUTING"]) else {
            continue;
        };
        for rule in rules.lines() {
            let Some(owner) = rule
                .split_whitespace()
                .find_map(|w| w.trim_matches('"').strip_prefix("emu:"))
            else {
                continue;
            };
            let Ok(pid) = owner.parse::<u32>() else {
                continue;
            };
            if std::path::Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let words: Vec<&str> = rule
                .split_whitespace()
                .map(|w| w.trim_matches('"'))
                .collect();
            if words.first() != Some(&"-A") {
                continue;
            }
            let mut args = vec!["-t", "nat", "-D"];
            args.extend_from_slice(&words[1..]);
            let _ = ns.exec(program, &args);
        }
    }
}

/// Turns on forwarding in `ns`, so packets from nested shells pass through.
/// IPv6 forwarding is only turned on inside emu's own namespaces: on the
/// host it would stop the host from accepting router advertisements.
pub fn enable_forwarding(ns: &NetNs, ipv6: bool) -> Result<()> {
    ns.run(move || {
        let mut settings = vec!["net.ipv4.ip_forward"];
        if ipv6 {
            settings.push("net.ipv6.conf.all.forwarding");
        }
        for key in settings {
            if !sysctl::reads(key, "1") {
                sysctl::write(key, "1")?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_delete_differ_only_in_the_action() {
        let (program, spec) = masquerade_spec("100.64.0.2".parse().unwrap(), 77);
        assert_eq!(program, "iptables");
        assert_eq!(
            with_action(&spec, "-A").join(" "),
            "-t nat -A POSTROUTING -s 100.64.0.2/32 -m comment --comment emu:77 -j MASQUERADE"
        );
        assert_eq!(with_action(&spec, "-D")[2], "-D");
        let (program, spec) = masquerade_spec("fd65:6d75::2".parse().unwrap(), 77);
        assert_eq!(program, "ip6tables");
        assert!(spec.contains(&"fd65:6d75::2/128".to_string()));
    }
}
