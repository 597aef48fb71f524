//! `--dry-run` (or `EMU_DRY_RUN=1`, for Mahimahi's commands, which take no
//! options of emu's): the chain is read and every link built as a run
//! builds it (queues, traces, schedules, loss models), then described,
//! and nothing is created: no namespace, device, rule or log. A command
//! that is itself one of Mahimahi's shells (`mm-delay 40 mm-link ...`) is
//! checked the same way, so a nested Mahimahi line is checked whole.

/// Whether the environment asks for a dry run.
pub fn asked_by_environment() -> bool {
    std::env::var_os("EMU_DRY_RUN").is_some_and(|v| v == "1")
}

/// Builds every link of `specs` and prints one line per shell; returns
/// the exit status (a nested Mahimahi command's own).
pub fn check(specs: &[shells::ShellSpec], command: &[String], mtu: u32) -> i32 {
    for (index, spec) in specs.iter().enumerate() {
        let setup = shells::links::LinkSetup {
            shell: index as u8,
            directions: &spec.directions,
            seed: spec.seed.unwrap_or(1),
            streams: [0, 1],
            max_packet: mtu as usize,
            start: 0,
        };
        for direction in 0..2 {
            drop(setup.build(direction, emu_core::log::LogSink::disabled()));
        }
        eprintln!("emu: dry run: shell {index}: {}", spec.description);
    }
    match command.first() {
        Some(program) if program.starts_with("mm-") => {
            match std::process::Command::new(program)
                .args(&command[1..])
                .env("EMU_DRY_RUN", "1")
                .status()
            {
                Ok(status) => status.code().unwrap_or(1),
                Err(e) => {
                    eprintln!("emu: dry run: starting {program}: {e}");
                    1
                }
            }
        }
        Some(_) => {
            eprintln!("emu: dry run: the command would be: {}", command.join(" "));
            0
        }
        None => {
            eprintln!("emu: dry run: the command would be your login shell");
            0
        }
    }
}
