//! Every command line README.md and docs/ show in a code block is run, so
//! a documented example cannot break silently: shells and Mahimahi's
//! commands as a dry run (every link built, nothing created), `emu run` as
//! `--list-cells` (every cell planned), `emu report` and the other tools
//! with their arguments as written (the inputs a reader would have made
//! are missing here, so a report must fail on them, not on its usage), and
//! `emu wrapper` on a Pantheon checkout of the tests' own.
//! Synopses (`[OPTIONS]`, `...`) are forms, not commands, and are skipped.
//!
//! Then every line that runs a command in shells (`... -- CMD`) is run for
//! real, pasted into `bash -c` as written (`sudo` left out: the tests run
//! as root) with no `EMU_BASE` in the environment, as a reader's shell has
//! none: a variable the reader's shell would expand to nothing fails here
//! too. The servers the text says to start on the host are started. Two
//! liberties, for time only: a line that is the command of another is
//! run once, and an iperf3 client that sets no time (`-t`) runs 2 s, not
//! its default 10: what is checked is that the line runs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command line found in a document, continuation lines joined.
struct Documented {
    place: String,
    line: String,
}

/// Code-block lines (fenced, or indented four spaces after a blank line)
/// that start with `emu` or a Mahimahi command, `sudo` left out (and
/// `env NAME=VALUE` before it kept).
fn documented_commands() -> Vec<Documented> {
    let mut documents = vec![repository().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repository().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    let mut found = Vec::new();
    for document in documents {
        let text = std::fs::read_to_string(&document).unwrap();
        let name = document
            .strip_prefix(repository())
            .unwrap()
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        let (mut fenced, mut in_block, mut after_blank) = (false, false, true);
        let mut k = 0;
        while k < lines.len() {
            let line = lines[k];
            let number = k + 1;
            k += 1;
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            let indented = line.starts_with("    ") && !line.trim_start().starts_with(['-', '*']);
            if !(fenced || (indented && (in_block || after_blank))) {
                in_block = false;
                after_blank = line.trim().is_empty();
                continue;
            }
            in_block = true;
            after_blank = false;
            let mut command = line.trim().trim_start_matches("sudo ").to_string();
            let first = program_word(&command);
            if !(first == "emu" || first.starts_with("mm-")) {
                continue;
            }
            while command.ends_with('\\') && k < lines.len() {
                command.pop();
                command.push(' ');
                command.push_str(lines[k].trim());
                k += 1;
            }
            found.push(Documented {
                place: format!("{name}:{number}"),
                line: command,
            });
        }
    }
    found
}

/// The program a line runs, past `env` and its `NAME=VALUE` words.
fn program_word(line: &str) -> &str {
    let mut words = line.split_whitespace();
    let mut first = words.next().unwrap_or("");
    if first == "env" {
        first = words.find(|w| !w.contains('=')).unwrap_or("");
    }
    first
}

/// The words of a command line as a POSIX shell splits them, up to a
/// comment, pipe or redirection: quotes grouped, variables left as text.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.get_or_insert_with(String::new).push(next);
                }
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '#' | '|' | '>') if word.is_none() => break,
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// What the reader's shell would have had: the repository's experiments
/// and traces, and the trace files the Mahimahi example names.
fn workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-documented-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for shared in ["experiments", "traces", "examples"] {
        std::os::unix::fs::symlink(repository().join(shared), dir.join(shared)).unwrap();
    }
    for trace in ["up.trace", "down.trace"] {
        std::fs::write(dir.join(trace), "1\n2\n").unwrap();
    }
    // A Pantheon checkout: the tests' own, with one of its wrappers in
    // the place of the scheme the README names.
    copy_tree(
        &repository().join("tests/pantheon-checkout"),
        &dir.join("pantheon"),
    );
    let wrappers = dir.join("pantheon/src/wrappers");
    std::fs::copy(wrappers.join("tcp_pacer.py"), wrappers.join("copa.py")).unwrap();
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The Mahimahi commands, found in PATH first: `mm-delay 40 mm-link ...`
/// runs `mm-link` by name; emu too, for the lines run through bash; and
/// last netperf's usual prefix (docs/guide.md's Flent section), which
/// Debian does not package.
fn mahimahi_path() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_mm-link"))
        .parent()
        .unwrap()
        .to_path_buf();
    format!(
        "{}:{}:{NETPERF_PREFIX}/bin",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Where docs/guide.md builds netperf (CI's scripts/install-deps too).
const NETPERF_PREFIX: &str = "/opt/netperf";

/// Runs one documented command as the module's header says.
fn check(documented: &Documented, dir: &Path) -> Result<(), String> {
    let mut args = words(&documented.line);
    // `env NAME=VALUE emu ...`: the variables are the reader's.
    if args[0] == "env" {
        let program = args.iter().skip(1).position(|w| !w.contains('=')).unwrap();
        args.drain(..=program);
    }
    let program = args.remove(0);
    // A whole-study array's flags (none by default).
    args.retain(|a| a != "$flags");
    for arg in &mut args {
        // A cluster job's variables (a whole-study task's file and cell
        // in it: the study's first; a study file's name), and a container's absolute paths to
        // the repository's files.
        *arg = arg
            .replace("$SLURM_ARRAY_TASK_ID", "0")
            .replace("$file", "experiments/sce-l4s/1-one-flow-l4s.toml")
            .replace("$family", "1-one-flow")
            .replace("$k", "0")
            .replace("$out", &dir.join("out").display().to_string());
        if let Some(inside) = arg.strip_prefix("/experiments/") {
            *arg = format!("experiments/{inside}");
        }
    }
    let subcommand = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    let mut command = if program == "emu" {
        Command::new(env!("CARGO_BIN_EXE_emu"))
    } else {
        Command::new(&program)
    };
    command
        .current_dir(dir)
        .env("PATH", mahimahi_path())
        .stdin(Stdio::null());
    let expect_usage_ok_only = match (program.as_str(), subcommand.as_str()) {
        (p, _) if p.starts_with("mm-") => {
            command.env("EMU_DRY_RUN", "1").args(&args);
            false
        }
        (_, "run") => {
            command.args(&args);
            if !args.iter().any(|a| a == "--list-cells") {
                command.arg("--list-cells");
            }
            false
        }
        (_, "report" | "ctl") => {
            command.args(&args);
            true
        }
        (_, "man") => {
            // Into the scratch directory, not the system's.
            let at = args.iter().position(|a| a == "--dir");
            if let Some(at) = at {
                args[at + 1] = dir.join("man").display().to_string();
            }
            command.args(&args);
            false
        }
        (_, "completions" | "wrapper") => {
            command.args(&args);
            false
        }
        _ => {
            command.arg("--dry-run").args(&args);
            false
        }
    };
    let output: Output = command
        .output()
        .map_err(|e| format!("starting {program}: {e}"))?;
    let status = output.status.code();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if expect_usage_ok_only {
        // The inputs (a run's logs, a running emu's socket) are missing: a
        // runtime error (1) is expected, a usage error (2) is the
        // document's.
        let names_itself = stderr.contains(&format!("emu {subcommand}"))
            || stderr.contains(&format!("emu: {subcommand}:"));
        if status == Some(2) || !names_itself {
            return Err(format!("status {status:?}: {stderr}"));
        }
    } else if status != Some(0) {
        return Err(format!("status {status:?}: {stderr}"));
    }
    Ok(())
}

#[test]
fn every_documented_command_line_runs() {
    let commands = documented_commands();
    assert!(
        commands.len() >= 30,
        "the documents show more commands than {} were found",
        commands.len()
    );
    let dir = workspace("dry");
    let mut failures = Vec::new();
    let mut checked = 0;
    for documented in commands.iter().filter(|d| !is_form(&d.line)) {
        let line = &documented.line;
        checked += 1;
        if let Err(why) = check(documented, &dir) {
            failures.push(format!("{}: {line}\n    {why}", documented.place));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 30, "only {checked} commands checked");
    assert!(
        failures.is_empty(),
        "documented commands that fail:\n{}",
        failures.join("\n")
    );
}

/// Synopses and dependency diagrams are forms, not commands.
fn is_form(line: &str) -> bool {
    line.contains("...")
        || line.contains("[OPTIONS]")
        || line.contains('→')
        || line.contains("(root package")
}

/// The command a line runs in its shells (what follows the last shell),
/// if any: `emu delay 40 -- link 10mbit -- iperf3 -c X` runs `iperf3 -c
/// X`; `emu delay 40` runs the reader's login shell, which is not run here.
fn shell_command(line: &str) -> Option<Vec<String>> {
    const SHELLS: [&str; 3] = ["delay", "link", "loss"];
    let words = words(line);
    let program = words
        .iter()
        .position(|w| w == "emu" || w.starts_with("mm-"))?;
    let mut rest = &words[program..];
    // Each `--` ends a shell; the first segment after one that is not a
    // shell is the command.
    loop {
        let at = rest.iter().position(|w| w == "--")?;
        rest = &rest[at + 1..];
        match rest.first() {
            Some(next) if SHELLS.contains(&next.as_str()) => continue,
            Some(_) => return Some(rest.to_vec()),
            None => return None,
        }
    }
}

/// What a line's command needs on the host, started before it and
/// stopped after: an iperf3 server for an iperf3 client (unless the line
/// starts one itself with `--outside`). None when a program the line runs
/// is not installed (said as skipped).
fn servers_for(line: &str, command: &[String]) -> Result<Vec<std::process::Child>, String> {
    let path = mahimahi_path();
    let installed =
        |program: &str| std::env::split_paths(&path).any(|dir| dir.join(program).is_file());
    if command.iter().any(|w| w == "flent") {
        if let Some(missing) = ["flent", "netperf", "netserver", "irtt"]
            .into_iter()
            .find(|p| !installed(p))
        {
            return Err(format!(
                "{missing} is not installed (docs/guide.md, Flent inside emu)"
            ));
        }
    }
    let mut servers = Vec::new();
    if command.iter().any(|w| w == "iperf3") && !line.contains("--outside") {
        servers.push(support::iperf3_server("5201"));
    }
    Ok(servers)
}

/// The line with a time of 2 s given to its iperf3 client where the line
/// ends in one that sets none (iperf3's default is 10 s).
fn shortened(line: &str, command: &[String]) -> String {
    let client = command.first().is_some_and(|p| p == "iperf3")
        && command.iter().any(|w| w == "-c" || w == "--client")
        && !command.iter().any(|w| w == "-t" || w == "--time");
    match client && words(line).last() == command.last() {
        true => format!("{line} -t 2"),
        false => line.to_string(),
    }
}

/// Runs a documented line through `bash -c` as the module's header says;
/// Ok, or what went wrong with the last lines of its output.
fn run_through_bash(line: &str, dir: &Path) -> Result<(), String> {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", mahimahi_path())
        .env_remove("EMU_BASE")
        .env_remove("EMU_BASE6")
        .env_remove("MAHIMAHI_BASE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting bash: {e}"))?;
    // A documented command that hangs is as broken as one that fails.
    let deadline = Instant::now() + Duration::from_secs(180);
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if output.status.success() {
        return Ok(());
    }
    // The first lines say what went wrong, the last where it ended.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let (first, last) = lines.split_at(lines.len().min(4));
    let last = &last[last.len().saturating_sub(3)..];
    Err(format!(
        "{}:\n      {}\n      ...\n      {}",
        output.status,
        first.join("\n      "),
        last.join("\n      ")
    ))
}

#[test]
fn every_documented_command_runs_through_bash_as_written() {
    let Some(_serial) = support::start() else {
        return;
    };
    let runs: Vec<(Documented, Vec<String>)> = documented_commands()
        .into_iter()
        .filter(|d| !is_form(&d.line))
        .filter_map(|d| shell_command(&d.line).map(|c| (d, c)))
        .collect();
    // The README's first line and the guide's Flent section among them.
    for wanted in ["README.md", "docs/guide.md"] {
        assert!(
            runs.iter().any(|(d, _)| d.place.starts_with(wanted)),
            "no command line of {wanted} was found"
        );
    }
    assert!(
        runs.iter()
            .any(|(_, c)| c.first().is_some_and(|p| p == "flent")),
        "the guide's Flent line was not found"
    );
    let mut failures = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (index, (documented, command)) in runs.iter().enumerate() {
        if !seen.insert(documented.line.clone()) {
            eprintln!("ran already: {}", documented.place);
            continue;
        }
        let dir = workspace(&format!("real{index}"));
        let servers = match servers_for(&documented.line, command) {
            Ok(servers) => servers,
            Err(why) => {
                eprintln!("skipped: {}: {why}", documented.place);
                continue;
            }
        };
        let result = run_through_bash(&shortened(&documented.line, command), &dir);
        for mut server in servers {
            let _ = server.kill();
            let _ = server.wait();
        }
        match result {
            Ok(()) => eprintln!("ran: {}: {}", documented.place, documented.line),
            Err(why) => failures.push(format!(
                "{}: {}\n    {why}",
                documented.place, documented.line
            )),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        failures.is_empty(),
        "documented commands that fail when pasted into bash:\n{}",
        failures.join("\n")
    );
}

#[test]
fn only_a_line_ending_in_an_untimed_iperf3_client_is_shortened() {
    let short = |line: &str| shortened(line, &shell_command(line).unwrap());
    assert_eq!(
        short("emu delay 40 -- link 10mbit -- iperf3 -c '$EMU_BASE'"),
        "emu delay 40 -- link 10mbit -- iperf3 -c '$EMU_BASE' -t 2"
    );
    for kept in [
        "emu link 10mbit -- iperf3 -c '$EMU_BASE' -t 5",
        "emu delay 20 -- sh -c 'sleep 0.2; iperf3 -c $EMU_BASE'",
        "emu --outside 'iperf3 -s' delay 5 -- ping -c 3 '$EMU_BASE'",
    ] {
        assert_eq!(short(kept), kept);
    }
}

#[test]
fn the_command_is_what_follows_the_last_shell() {
    let command = |line: &str| shell_command(line).map(|c| c.join(" "));
    assert_eq!(
        command("emu delay 40 -- link 10mbit -- iperf3 -c '$EMU_BASE'").as_deref(),
        Some("iperf3 -c $EMU_BASE")
    );
    assert_eq!(
        command("env PATH=$PATH emu --outside 'x -- y' delay 1 -- flent a").as_deref(),
        Some("flent a")
    );
    assert_eq!(
        command("mm-delay 40 mm-link a b -- sh -c 'ping x'").as_deref(),
        Some("sh -c ping x")
    );
    assert_eq!(command("emu delay 40 -- link 10mbit"), None);
    assert_eq!(command("emu delay 40"), None);
    assert_eq!(program_word("env A=1 B=2 emu delay 1"), "emu");
}

#[test]
fn command_lines_split_as_a_shell_splits_them() {
    assert_eq!(
        words(r#"emu link --queue "codel ecn" -- sh -c 'a b' # note"#),
        [
            "emu",
            "link",
            "--queue",
            "codel ecn",
            "--",
            "sh",
            "-c",
            "a b"
        ]
    );
    assert_eq!(words("emu man | man -l -"), ["emu", "man"]);
    assert_eq!(
        words("emu completions bash > x"),
        ["emu", "completions", "bash"]
    );
    assert_eq!(words(r"a\ b c"), ["a b", "c"]);
    assert_eq!(words(r#"x "" y"#), ["x", "", "y"]);
}
