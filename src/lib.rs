//! `emu`'s command line as a library, so that `emu` and Mahimahi's
//! commands (`mm-delay`, `mm-link`, ...) share one compiled copy of it:
//! each binary is a call to [`start`]. It parses, builds shell
//! specifications, and hands them to the `shells` crate; it owns no
//! behaviour of its own.

mod cli;

/// Runs the command named by argv[0] with the rest of the arguments and
/// returns its exit status.
pub fn start() -> i32 {
    // Before anything else, while there is one thread: a setuid emu keeps
    // its user's identity for later and scrubs what it must not trust.
    if let Err(message) = shells::privilege::settle() {
        eprintln!("emu: {message}");
        return 1;
    }
    match utf8_arguments(std::env::args_os().skip(1)) {
        Ok(args) => cli::main(args),
        Err(message) => {
            eprintln!("emu: {message}");
            2
        }
    }
}

/// The arguments as text, or which one is not. emu's options, shells and
/// the command it passes on are all read as UTF-8 (`std::env::args` would
/// panic on the first that is not).
fn utf8_arguments(args: impl Iterator<Item = std::ffi::OsString>) -> Result<Vec<String>, String> {
    args.enumerate()
        .map(|(i, arg)| {
            arg.into_string().map_err(|arg| {
                format!(
                    "argument {} ({:?}) is not valid UTF-8; emu takes UTF-8 arguments only \
                     (give such bytes to the command in a script or an environment variable)",
                    i + 1,
                    arg
                )
            })
        })
        .collect()
}
