//! The congestion control a shell's command gets when it chooses none:
//! said at start, the host's unless `--cc` sets another, and what an
//! ordinary user's command cannot choose said with how to allow it.

mod support;

use support::text;

fn proc_words(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// emu's run of `cat` of the command's namespace default: (stdout, stderr).
fn default_inside(emu_args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let out = support::emu()
        .args(emu_args)
        .args([
            "delay",
            "1",
            "--",
            "cat",
            "/proc/sys/net/ipv4/tcp_congestion_control",
        ])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{emu_args:?}: {stderr}");
    (text(&out.stdout).trim().to_string(), stderr)
}

#[test]
fn the_commands_default_is_said_and_set_by_cc() {
    let Some(_serial) = support::start() else {
        return;
    };
    let host = proc_words("tcp_congestion_control").remove(0);
    let (inside, stderr) = default_inside(&[], &[]);
    assert_eq!(inside, host, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "emu: congestion control: {host}, the host's default"
        )),
        "{stderr}"
    );
    // reno is always built in, and always allowed.
    let (inside, stderr) = default_inside(&["--cc", "reno"], &[]);
    assert_eq!(inside, "reno", "{stderr}");
    assert!(
        stderr.contains("emu: congestion control: reno (--cc)"),
        "{stderr}"
    );
    // The host's default is untouched.
    assert_eq!(proc_words("tcp_congestion_control")[0], host);
}

#[test]
fn an_ordinary_users_command_is_told_what_it_cannot_choose() {
    let Some(_serial) = support::start() else {
        return;
    };
    let allowed = proc_words("tcp_allowed_congestion_control");
    let restricted: Vec<String> = proc_words("tcp_available_congestion_control")
        .into_iter()
        .filter(|a| !allowed.contains(a))
        .collect();
    // Run through sudo, the command is the invoking user's (nobody here).
    let as_nobody = [
        ("SUDO_UID", "65534"),
        ("SUDO_GID", "65534"),
        ("SUDO_USER", "nobody"),
    ];
    let (_, stderr) = default_inside(&[], &as_nobody);
    let said = stderr.contains("the command may choose only");
    if restricted.is_empty() {
        assert!(!said, "every congestion control is allowed here: {stderr}");
        eprintln!("skipped the restricted case: this host allows every congestion control it has");
        return;
    }
    assert!(said, "{stderr}");
    assert!(
        stderr.contains(&format!("{} needs root", restricted[0]))
            && stderr.contains("sudo sysctl -w net.ipv4.tcp_allowed_congestion_control="),
        "{stderr}"
    );
    // As the namespace's default, one is refused before anything is
    // built, with the command that allows it.
    let out = support::run(&["--cc", &restricted[0], "delay", "1", "--", "true"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("--cc {}", restricted[0]))
            && stderr.contains("tcp_allowed_congestion_control=")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn an_unknown_congestion_control_is_a_usage_error() {
    let out = support::run(&["--cc", "no-such-cc", "delay", "1", "--", "true"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no-such-cc") && stderr.contains("emu cc"),
        "{stderr}"
    );
}

/// The placeholders of the host's address reach the command filled in,
/// and a shell's script is left to expand its own.
#[test]
fn quoted_placeholders_become_the_hosts_address() {
    let Some(_serial) = support::start() else {
        return;
    };
    let out = support::emu()
        .args([
            "delay",
            "1",
            "--",
            "echo",
            "$EMU_BASE",
            "${EMU_BASE6}",
            "$MAHIMAHI_BASE",
            "$HOME",
        ])
        .env_remove("EMU_BASE")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 4, "{stdout}");
    assert!(words[0].parse::<std::net::Ipv4Addr>().is_ok(), "{stdout}");
    assert!(words[1].parse::<std::net::Ipv6Addr>().is_ok(), "{stdout}");
    assert_eq!(words[2], words[0]);
    assert_eq!(words[3], "$HOME");
    let out = support::emu()
        .args([
            "delay",
            "1",
            "--",
            "sh",
            "-c",
            "EMU_BASE=mine; echo $EMU_BASE",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout).trim(), "mine", "{}", text(&out.stderr));
}
