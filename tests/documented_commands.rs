//! Every command line README.md and docs/ show in a code block is run, so
//! a documented example cannot break silently: shells and Mahimahi's
//! commands as a dry run (every link built, nothing created), `emu run` as
//! `--list-cells` (every cell planned), `emu report` and the other tools
//! with their arguments as written (the inputs a reader would have made
//! are missing here, so a report must fail on them, not on its usage), and
//! `emu wrapper` on a Pantheon checkout of the tests' own.
//! Synopses (`[OPTIONS]`, `...`) are forms, not commands, and are skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command line found in a document, continuation lines joined.
struct Documented {
    place: String,
    line: String,
}

/// Code-block lines (fenced, or indented four spaces after a blank line)
/// that start with `emu` or a Mahimahi command, `sudo` left out.
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
            let first = command.split_whitespace().next().unwrap_or("");
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
fn workspace() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-documented-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for shared in ["experiments", "traces"] {
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
/// runs `mm-link` by name.
fn mahimahi_path() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_mm-link"))
        .parent()
        .unwrap()
        .to_path_buf();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs one documented command as the module's header says.
fn check(documented: &Documented, dir: &Path) -> Result<(), String> {
    let mut args = words(&documented.line);
    let program = args.remove(0);
    for arg in &mut args {
        // A cluster job's variables, and a container's absolute paths to
        // the repository's files.
        *arg = arg
            .replace("$SLURM_ARRAY_TASK_ID", "0")
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
        (_, "report") => {
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
        // The inputs are missing: a runtime error (1) is expected, a
        // usage error (2) is the document's.
        if status == Some(2) || !stderr.contains("emu report") {
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
    let dir = workspace();
    let mut failures = Vec::new();
    let mut checked = 0;
    for documented in &commands {
        let line = &documented.line;
        // Synopses and dependency diagrams are forms, not commands.
        if line.contains("...") || line.contains("[OPTIONS]") || line.contains('→') {
            continue;
        }
        if line.contains("(root package") {
            continue;
        }
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
