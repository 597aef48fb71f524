//! What every part of the command line answers the user with: a usage
//! error (one message, exit status 2) and what it prints on stdout.

/// A user mistake on the command line: one message, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

/// Writes `text` to stdout as `print!` would, without its panic: a reader
/// that has gone (`emu queues | head`, `emu --help | true`) took what it
/// wanted, so that is no error, and emu ends with status 0 as before; any
/// other failure is said on stderr. (emu ignores SIGPIPE, as Rust programs
/// do, so that its shells always tear down: a write into a closed pipe
/// fails instead of ending emu, and `println!` panics on that failure.)
pub fn print_out(text: impl std::fmt::Display) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = write!(out, "{text}").and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("emu: writing to stdout: {e}");
        }
    }
}
