//! emu builds its shells without `ip` or `tc`: devices, addresses, routes
//! and counters go over rtnetlink. The test makes every `ip` and `tc` the
//! system has (wherever emu's tool lookup could find one) fail, by binding
//! `false` over them in a private mount namespace, and runs a shell there.
//!
//! It needs root; see [`support`] for how it runs.

mod support;

use support::*;

/// Binds `false` over every `ip` and `tc` in `PATH` and the system's
/// directories, checks that `ip` no longer works, then runs emu ($0).
const WITHOUT_IPROUTE: &str = r#"
for name in ip tc; do
  for dir in $(echo "$PATH" | tr : ' ') /usr/local/sbin /usr/sbin /sbin /usr/local/bin /usr/bin /bin; do
    if [ -x "$dir/$name" ]; then mount --bind /bin/false "$dir/$name" || exit 96; fi
  done
done
if ip link show >/dev/null 2>&1; then echo "ip still works"; exit 97; fi
exec "$0" delay 1 -- sh -c 'ping -c 1 -W 2 $EMU_BASE >/dev/null && ping -6 -c 1 -W 2 $EMU_BASE6 >/dev/null && echo reached both'
"#;

#[test]
fn a_shell_is_built_and_carries_packets_with_ip_and_tc_unable_to_run() {
    let Some(_serial) = start() else { return };
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(WITHOUT_IPROUTE)
        .arg(env!("CARGO_BIN_EXE_emu"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("unshare (util-linux) is needed");
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("reached both"),
        "status {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
}
