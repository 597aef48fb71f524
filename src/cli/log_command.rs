//! `emu log dump FILE [--format csv|jsonl]`: a binary packet log as text;
//! `emu log header FILE`: what the log says of the shell that wrote it.
//! (Figures and plots of logs are `emu report`'s; numpy reads the binary
//! log directly, see docs/log-format.md.)

use super::output::UsageError;
use clap::{Args, Subcommand, ValueEnum};
use emu_core::log::text::{dump, DumpFormat};
use emu_core::log::LogReader;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct LogArgs {
    #[command(subcommand)]
    action: LogAction,
}

#[derive(Subcommand)]
enum LogAction {
    /// Print every record of a log as CSV or JSON Lines.
    Dump {
        /// A log file (`N-KIND.emulog` in the directory given to --log).
        #[arg(value_hint = clap::ValueHint::FilePath)]
        file: PathBuf,
        /// csv: a header line, then one line per record; jsonl (or json): one
        /// JSON object per line, with the CSV's columns as keys.
        #[arg(long, value_enum, default_value = "csv")]
        format: Format,
    },
    /// Print a log's header as JSON: the shell, its queues and rates, and
    /// the clock origins that turn record times into wall-clock times.
    Header {
        /// A log file (`N-KIND.emulog` in the directory given to --log).
        #[arg(value_hint = clap::ValueHint::FilePath)]
        file: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Csv,
    #[value(alias = "json")]
    Jsonl,
}

pub fn run(args: LogArgs) -> Result<i32, UsageError> {
    let (file, format) = match args.action {
        LogAction::Dump { file, format } => (file, format),
        LogAction::Header { file } => return Ok(header(&file)),
    };
    let reader = match LogReader::open(&file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("emu: {e}");
            return Ok(1);
        }
    };
    let format = match format {
        Format::Csv => DumpFormat::Csv,
        Format::Jsonl => DumpFormat::JsonLines,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match dump(reader, format, &mut out) {
        Ok(_) => Ok(0),
        Err(e) => {
            use std::io::Write;
            let _ = out.flush();
            // A closed pipe (`| head`) is not an error worth a message.
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return Ok(0);
            }
            eprintln!("emu: {e}");
            Ok(1)
        }
    }
}

/// Prints the header of the log at `file`; the exit status.
fn header(file: &Path) -> i32 {
    match LogReader::open(file) {
        Ok(reader) => {
            let json = serde_json::to_string_pretty(&reader.header).expect("headers serialize");
            super::output::print_out(format_args!("{json}\n"));
            0
        }
        Err(e) => {
            eprintln!("emu: {e}");
            1
        }
    }
}
