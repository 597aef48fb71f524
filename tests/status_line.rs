//! The live status line through real shells (root needed, like
//! tests/shells.rs; run under the machine-wide network-test lock).

use std::process::{Command, Stdio};

fn emu_stderr(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running emu");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("EMU_SKIP_PRIVILEGED").as_deref() == Ok("1") {
        eprintln!("skipped: not root and EMU_SKIP_PRIVILEGED=1");
        return false;
    }
    panic!("this test needs root (network namespaces, TUN devices); run it with sudo, or set EMU_SKIP_PRIVILEGED=1 to skip it");
}

/// A number after `word ` in `text`.
fn number_after(text: &str, word: &str) -> f64 {
    let rest = &text[text
        .find(word)
        .unwrap_or_else(|| panic!("no '{word}' in {text}"))
        + word.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn status_lines_show_each_shell_and_direction_every_second() {
    if !root() {
        return;
    }
    let (ok, stderr) = emu_stderr(&[
        "--status",
        "loss",
        "--uplink",
        "1",
        "--downlink",
        "0",
        "--",
        "delay",
        "5",
        "--",
        "sh",
        "-c",
        "ping -c 30 -i 0.1 -w 4 -q $EMU_BASE >/dev/null; true",
    ]);
    assert!(ok, "{stderr}");
    let delay_rows: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("[delay 5 ms]"))
        .collect();
    let loss_rows: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("[loss up 1 down 0]"))
        .collect();
    assert!(
        delay_rows.len() >= 2,
        "not refreshed every second:\n{stderr}"
    );
    assert_eq!(delay_rows.len(), loss_rows.len(), "{stderr}");
    let last = loss_rows.last().unwrap();
    let (up, down) = last.split_once(" | ").unwrap();
    // Echo requests cross the inner delay shell, enter the outer loss
    // shell's uplink (~10 per second) and are all dropped there; nothing
    // comes back down.
    assert!(number_after(up, "up in ") > 0.0, "{last}");
    assert_eq!(number_after(up, "out "), 0.0, "{last}");
    assert!(number_after(up, "drop ") >= 10.0, "{last}");
    assert_eq!(number_after(down, "drop "), 0.0, "{last}");
    for word in ["queue ", "mark "] {
        number_after(up, word);
    }
    // Through the delay shell, the requests pass on the uplink.
    assert!(delay_rows
        .last()
        .unwrap()
        .contains(" | down in 0.00 out 0.00"));
    let delay_last = delay_rows.last().unwrap();
    assert!(number_after(delay_last, "out ") > 0.0, "{delay_last}");

    // Not a terminal and no --status: no status lines.
    let (ok, stderr) = emu_stderr(&["delay", "1", "--", "sh", "-c", "sleep 1.5"]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("[delay"), "{stderr}");
}
