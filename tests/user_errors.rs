//! What a user sees when something is wrong: the command's exit status is
//! emu's, bad arguments and traces give one clear message and leave
//! nothing behind, a missing privilege is named with its fix, and the
//! command runs as the user who called sudo.
//!
//! They need root; see [`support`] for how they run.

mod support;

use std::path::Path;
use std::process::Stdio;
use support::*;

#[test]
fn exit_status_propagates() {
    let Some(_serial) = start() else { return };
    assert_eq!(
        run(&["delay", "1", "--", "sh", "-c", "exit 7"])
            .status
            .code(),
        Some(7)
    );
    assert_eq!(run(&["delay", "1", "--", "true"]).status.code(), Some(0));
    // Killed by a signal: 128 + signal number, as a shell reports it.
    assert_eq!(
        run(&["delay", "1", "--", "sh", "-c", "kill -9 $$"])
            .status
            .code(),
        Some(137)
    );
    let out = run(&["delay", "1", "--", "no-such-command-xyz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("'no-such-command-xyz' was not found"));
}

#[test]
fn bad_arguments_and_malformed_traces_give_one_clear_error_and_leave_nothing() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("badtrace");
    let cases: Vec<(Vec<String>, &str)> = {
        let decreasing = dir.join("decreasing.trace");
        std::fs::write(&decreasing, "5\n7\n3\n").unwrap();
        let empty_line = dir.join("empty-line.trace");
        std::fs::write(&empty_line, "1\n\n2\n").unwrap();
        let zero = dir.join("zero.trace");
        std::fs::write(&zero, "0\n").unwrap();
        let s = |p: &Path| p.display().to_string();
        vec![
            (vec!["delay".into(), "forty".into()], "'forty' is not valid"),
            (
                vec!["link".into(), "10 mbit".into()],
                "'10 mbit' is not valid",
            ),
            (
                vec![
                    "link".into(),
                    "10mbit".into(),
                    "--queue".into(),
                    "droptail flows 3".into(),
                ],
                "unknown option 'flows'",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&decreasing),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "decreasing.trace:3: timestamps must be nondecreasing",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&empty_line),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "empty-line.trace:2: empty line",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&zero),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "nonzero",
            ),
            (vec!["loss".into(), "2".into()], "'2' is not a probability"),
            (
                vec!["--bogus".into(), "delay".into(), "1".into()],
                "unknown option '--bogus'",
            ),
            (vec!["tunnel".into(), "1".into()], "'tunnel' is not a shell"),
        ]
    };
    for (args, expected) in cases {
        let child = emu()
            .args(&args)
            .arg("--")
            .arg("true")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: expected '{expected}' in: {stderr}"
        );
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: not one line: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(leftovers(pid, "no-marker-needed-here").is_empty());
    }
}

#[test]
fn missing_privilege_is_named_with_the_fix() {
    let Some(_serial) = start() else { return };
    let out = support::emu_as_nobody(&["delay", "10", "--", "true"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("CAP_SYS_ADMIN")
            && stderr.contains("CAP_NET_ADMIN")
            && stderr.contains("sudo"),
        "{stderr}"
    );
}

#[test]
fn the_command_runs_as_the_user_who_called_sudo() {
    let Some(_serial) = start() else { return };
    let out = emu()
        .env("SUDO_UID", "65534")
        .args(["delay", "1", "--", "id", "-u"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "65534");
}
