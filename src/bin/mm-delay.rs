//! Mahimahi's `mm-delay`: emu's command line, which reads its name from argv[0].

fn main() {
    std::process::exit(emu_cli::start());
}
