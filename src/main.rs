//! `emu`: the command line. It parses, builds shell specifications, and
//! hands them to the `shells` crate; it owns no behaviour of its own.

mod cli;

fn main() {
    // Before anything else, while there is one thread: a setuid emu keeps
    // its user's identity for later and scrubs what it must not trust.
    if let Err(message) = shells::privilege::settle() {
        eprintln!("emu: {message}");
        std::process::exit(1);
    }
    std::process::exit(cli::main(std::env::args().skip(1).collect()));
}
