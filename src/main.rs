//! `emu`: the command line (src/lib.rs).

fn main() {
    std::process::exit(emu_cli::start());
}
