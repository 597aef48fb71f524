//! `emu wrapper WRAPPER ARG...`: a Pantheon scheme's wrapper run as `emu
//! run` runs it (see `experiment::run::wrappers`), for its `deps`, `setup` and
//! `setup_after_reboot`, which Pantheon's own Python 2 harness would run.

use super::output::UsageError;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
#[command(
    long_about = "Run a Pantheon scheme's wrapper as `emu run` runs it: a Python wrapper \
        under python3 with emu's own arg_parser and context modules (Pantheon's are \
        Python 2), its Python 2 prints read as calls, nothing written into the checkout.\n\n\
        Examples:\n  emu wrapper pantheon/src/wrappers/copa.py deps\n  \
        emu wrapper pantheon/src/wrappers/copa.py setup"
)]
pub struct WrapperArgs {
    /// The wrapper (a Pantheon checkout's src/wrappers/SCHEME.py).
    wrapper: PathBuf,
    /// Its arguments: deps, setup, setup_after_reboot, run_first, or a side.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub fn run(cli: WrapperArgs) -> Result<i32, UsageError> {
    if !cli.wrapper.is_file() {
        return Err(UsageError(format!(
            "wrapper: {} is not a file: give a scheme's wrapper, e.g. pantheon/src/wrappers/copa.py",
            cli.wrapper.display()
        )));
    }
    let argv = experiment::run::wrappers::command(&cli.wrapper)
        .map_err(|e| UsageError(format!("wrapper: {e}")))?;
    // Replaced by the wrapper's own process: signals (a timeout's SIGINT)
    // reach it, and its status is the command's.
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .args(&cli.args),
    );
    Err(UsageError(format!("wrapper: running {}: {error}", argv[0])))
}
