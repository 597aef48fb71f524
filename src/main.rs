//! `emu`: the command line. It parses, builds shell specifications, and
//! hands them to the `shells` crate; it owns no behaviour of its own.

mod cli;

fn main() {
    std::process::exit(cli::main(std::env::args().skip(1).collect()));
}
