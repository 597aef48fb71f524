//! emu as users have it: through sudo, as a setuid-root binary run by an
//! ordinary user, and rootless in a user namespace. Each test makes its own
//! user (useradd) and removes it again.
//!
//! They need root (to create the user and the setuid copy) and the tools of
//! tests/shells.rs; run them under the machine's network-test lock:
//! `flock /tmp/emu-nettest.lock cargo test --release --test privileges`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> Option<std::sync::MutexGuard<'static, ()>> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("EMU_SKIP_PRIVILEGED").as_deref() == Ok("1") {
            eprintln!("skipped: not root and EMU_SKIP_PRIVILEGED=1");
            return None;
        }
        panic!("these tests need root (they create a user and a setuid copy of emu); run them with sudo, or set EMU_SKIP_PRIVILEGED=1 to skip them");
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A user made for one test, removed (with its group) when dropped.
struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl TestUser {
    fn create(tag: &str) -> TestUser {
        let name = format!("emu{tag}{}", std::process::id() % 100_000);
        let _ = Command::new("userdel").arg(&name).output();
        let out = Command::new("useradd")
            .args(["--no-create-home", "--user-group", "--shell", "/bin/sh"])
            .arg(&name)
            .output()
            .expect("running useradd (package passwd)");
        assert!(out.status.success(), "useradd: {}", text(&out.stderr));
        let id = |flag: &str| -> u32 {
            let out = Command::new("id").args([flag, &name]).output().unwrap();
            text(&out.stdout).trim().parse().unwrap()
        };
        let (uid, gid) = (id("-u"), id("-g"));
        TestUser { name, uid, gid }
    }

    /// `program` run as this user, as a login would start it: real and
    /// effective ids the user's, no sudo variables.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid",
                &self.name,
                "--regid",
                &self.name,
                "--init-groups",
            ])
            .arg(program)
            .env_remove("SUDO_UID")
            .env_remove("SUDO_GID")
            .env_remove("SUDO_USER")
            // The distribution's default PATH for users: no sbin.
            .env(
                "PATH",
                "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games",
            )
            .stdin(Stdio::null());
        command
    }

    /// A directory only this user (and root) may write.
    fn own_dir(&self, path: &Path) {
        std::fs::create_dir_all(path).unwrap();
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("emu-priv-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// emu made setuid root in a root-owned directory by its own setup step.
fn setuid_emu(dir: &Path) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .args(["setup-setuid", "--copy-to"])
        .arg(dir.join("bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "setup-setuid: {}", text(&out.stderr));
    let emu = dir.join("bin/emu");
    let meta = std::fs::metadata(&emu).unwrap();
    assert_eq!(meta.uid(), 0, "the setuid copy is root's");
    assert_eq!(meta.mode() & 0o7777, 0o4755, "the copy is setuid root");
    emu
}

fn owners(dir: &Path) -> Vec<(String, u32, u32)> {
    let mut entries: Vec<(String, u32, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                meta.uid(),
                meta.gid(),
            )
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn a_setuid_emu_runs_the_command_as_the_user_and_writes_only_where_the_user_may() {
    let Some(_serial) = serial() else { return };
    let scratch = Scratch::new("setuid");
    let emu = setuid_emu(&scratch.0);
    let user = TestUser::create("s");
    let home = scratch.0.join("home");
    user.own_dir(&home);

    // Programs of the user's that a careless setuid program would run as
    // root: each leaves a mark and fails.
    let evil = scratch.0.join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    let marker = scratch.0.join("evil-ran");
    for tool in ["ip", "iptables", "ip6tables", "sysctl"] {
        let path = evil.join(tool);
        std::fs::write(
            &path,
            format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", evil.display());

    let logs = home.join("logs");
    let out = user
        .command(&emu)
        .arg("--log")
        .arg(&logs)
        .args([
            "delay",
            "1",
            "--",
            "sh",
            "-c",
            "id -u; id -g; echo \"$EMU_TEST_VALUE\"",
        ])
        .env("PATH", &path)
        // iptables loads its extensions from here: if emu passed it on,
        // the NAT rule would fail to load `comment` and `MASQUERADE`.
        .env("XTABLES_LIBDIR", scratch.0.join("no-such-dir"))
        .env("EMU_TEST_VALUE", "kept for the command")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "setuid run failed: {}",
        text(&out.stderr)
    );
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(
        lines[0],
        user.uid.to_string(),
        "the command runs as the user"
    );
    assert_eq!(lines[1], user.gid.to_string());
    assert_eq!(
        lines[2], "kept for the command",
        "the command keeps the user's environment"
    );
    assert!(
        !marker.exists(),
        "emu ran the user's own 'ip' or 'iptables' as root"
    );
    let files = owners(&logs);
    assert!(files.iter().any(|f| f.0 == "0-delay.emulog"), "{files:?}");
    assert!(files.iter().any(|f| f.0 == "summary-0.json"), "{files:?}");
    for (name, uid, gid) in &files {
        assert_eq!(
            (*uid, *gid),
            (user.uid, user.gid),
            "{name} is not the user's"
        );
    }
    let meta = std::fs::metadata(&logs).unwrap();
    assert_eq!(meta.uid(), user.uid, "the log directory is the user's");

    // A place only root may write: refused, and nothing is created there.
    let root_only = scratch.0.join("root-only");
    std::fs::create_dir_all(&root_only).unwrap();
    std::fs::set_permissions(&root_only, std::fs::Permissions::from_mode(0o700)).unwrap();
    let secret = root_only.join("secret.trace");
    std::fs::write(&secret, "1\n2\n").unwrap();
    let out = user
        .command(&emu)
        .arg("--log")
        .arg(root_only.join("logs"))
        .args(["delay", "1", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Permission denied") && stderr.contains("root-only/logs"),
        "{stderr}"
    );
    assert!(!root_only.join("logs").exists());

    // A file only root may read is no trace for the user (nor copied into
    // the user's log directory).
    let copied = home.join("copied");
    let out = user
        .command(&emu)
        .arg("--log")
        .arg(&copied)
        .args(["link", "--downlink", "1mbit", "--uplink-trace"])
        .arg(&secret)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(!copied.exists());
    // Nor is it a delay trace, a rate trace or a jitter distribution, whose
    // errors would quote its first line.
    std::fs::write(&secret, "root:secret-line\n").unwrap();
    for args in [
        vec!["delay", "--delay-trace"],
        vec!["link", "10mbit", "--rate-trace"],
        vec!["delay", "10", "--jitter", "1ms", "--distribution"],
    ] {
        let out = user
            .command(&emu)
            .args(&args)
            .arg(&secret)
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.contains("Permission denied"), "{args:?}: {stderr}");
        assert!(!stderr.contains("secret-line"), "{args:?}: {stderr}");
    }

    // An experiment's programs and results would be root's: a setuid emu
    // refuses to run one, before reading the file.
    let experiment = home.join("x.toml");
    std::fs::write(&experiment, "[[flows]]\nkind = \"command\"\n").unwrap();
    let out = user
        .command(&emu)
        .arg("run")
        .arg(&experiment)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sudo emu run"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // Subcommands that need no privilege run as the user: a root-only log
    // cannot be read through emu.
    std::fs::copy(logs.join("0-delay.emulog"), root_only.join("x.emulog")).unwrap();
    let out = user
        .command(&emu)
        .args(["log", "dump"])
        .arg(root_only.join("x.emulog"))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );

    // Only root may make emu setuid, not a user through the setuid copy.
    let out = user
        .command(&emu)
        .args(["setup-setuid", "--copy-to"])
        .arg(home.join("mine"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("must be run by root"),
        "{}",
        text(&out.stderr)
    );
    assert!(!home.join("mine").exists());
}

#[test]
fn through_sudo_the_command_and_the_files_are_the_users() {
    let Some(_serial) = serial() else { return };
    let scratch = Scratch::new("sudo");
    let user = TestUser::create("u");
    let home = scratch.0.join("home");
    user.own_dir(&home);
    let logs = home.join("logs");
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .env("SUDO_UID", user.uid.to_string())
        .env("SUDO_GID", user.gid.to_string())
        .arg("--log")
        .arg(&logs)
        .args(["delay", "1", "--", "id", "-u"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), user.uid.to_string());
    let files = owners(&logs);
    assert_eq!(files.len(), 2, "{files:?}");
    for (name, uid, _) in &files {
        assert_eq!(*uid, user.uid, "{name} is not the user's");
    }

    // Where the user may not write, neither may emu on the user's behalf.
    let root_only = scratch.0.join("root-only");
    std::fs::create_dir_all(&root_only).unwrap();
    std::fs::set_permissions(&root_only, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .env("SUDO_UID", user.uid.to_string())
        .arg("--log")
        .arg(root_only.join("logs"))
        .args(["delay", "1", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(std::fs::read_dir(&root_only).unwrap().next().is_none());
}

/// Kernel settings and a device mode changed for one test and put back.
struct Restore(Vec<Box<dyn FnOnce()>>);

impl Drop for Restore {
    fn drop(&mut self) {
        for undo in self.0.drain(..) {
            undo();
        }
    }
}

/// What rootless emu needs of the machine, enabled for the test where the
/// machine turns it off (and put back after): unprivileged user namespaces
/// and a /dev/net/tun that users may open, as distributions ship it.
fn allow_rootless() -> Restore {
    let mut restore = Restore(Vec::new());
    for (path, wanted) in [
        ("/proc/sys/user/max_user_namespaces", None),
        ("/proc/sys/kernel/unprivileged_userns_clone", Some("1")),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            Some("0"),
        ),
    ] {
        let Ok(old) = std::fs::read_to_string(path) else {
            continue; // this kernel has no such switch
        };
        let old = old.trim().to_string();
        let new = match wanted {
            Some(value) => value.to_string(),
            None if old == "0" => "1000".to_string(),
            None => continue,
        };
        if old != new {
            eprintln!("note: setting {path} from {old} to {new} for this test");
            std::fs::write(path, &new).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
            restore.0.push(Box::new(move || {
                let _ = std::fs::write(path, &old);
            }));
        }
    }
    let mode = std::fs::metadata("/dev/net/tun").unwrap().mode() & 0o7777;
    if mode & 0o006 != 0o006 {
        eprintln!("note: /dev/net/tun has mode {mode:o}; giving it the usual 0666 for this test");
        std::fs::set_permissions("/dev/net/tun", std::fs::Permissions::from_mode(0o666)).unwrap();
        restore.0.push(Box::new(move || {
            let _ = std::fs::set_permissions("/dev/net/tun", std::fs::Permissions::from_mode(mode));
        }));
    }
    restore
}

#[test]
fn rootless_an_ordinary_user_runs_shells_and_reaches_an_outside_server() {
    let Some(_serial) = serial() else { return };
    let _allowed = allow_rootless();
    let scratch = Scratch::new("rootless");
    let user = TestUser::create("r");
    let home = scratch.0.join("home");
    user.own_dir(&home);
    // An ordinary copy (not setuid) the user can run.
    let emu = scratch.0.join("emu");
    std::fs::copy(env!("CARGO_BIN_EXE_emu"), &emu).unwrap();

    // Without --rootless the user is told what is missing and the ways out.
    let out = user
        .command(&emu)
        .args(["delay", "1", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--rootless"),
        "{}",
        text(&out.stderr)
    );

    let logs = home.join("logs");
    let out = user
        .command(&emu)
        .args(["--rootless", "--outside", "iperf3 -s >/dev/null 2>&1", "--log"])
        .arg(&logs)
        .args(["delay", "10", "--", "link", "20mbit", "--"])
        .args(["sh", "-c"])
        .arg(
            "id -u; ping -c 3 -i 0.2 $EMU_BASE | tail -1; \
             for i in 1 2 3 4 5; do iperf3 -c $EMU_BASE -n 500K >/dev/null 2>&1 && echo transferred && break; sleep 0.2; done",
        )
        .current_dir(&home)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "rootless run failed: {}\n{stdout}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "0",
        "inside its own user namespace the user is root"
    );
    let min_rtt: f64 = lines[1]
        .split('=')
        .nth(1)
        .and_then(|v| v.trim().split('/').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no ping summary: {stdout}"));
    assert!(
        min_rtt >= 20.0,
        "two crossings of delay 10 take 20 ms, not {min_rtt}"
    );
    assert_eq!(
        lines.get(2),
        Some(&"transferred"),
        "TCP to the outside server: {stdout}"
    );
    // The receivers' drop counters are read in emu's own namespaces too.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(logs.join("summary-0.json")).unwrap())
            .unwrap();
    assert!(summary["receivers"].is_object(), "{summary}");
    // On disk, what rootless root wrote is the user's.
    for (name, uid, _) in owners(&logs) {
        assert_eq!(uid, user.uid, "{name} is not the user's");
    }
    // The outside server went with emu.
    let left = Command::new("ps")
        .args(["-u", &user.name, "-o", "pid=,stat=,args="])
        .output()
        .unwrap();
    assert!(
        text(&left.stdout).trim().is_empty(),
        "left running: {}",
        text(&left.stdout)
    );
}
