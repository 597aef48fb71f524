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
    cli::main(std::env::args().skip(1).collect())
}
