//! `emu log dump FILE [--format csv|json]`: a binary packet log as text.
//! (Figures and plots of logs are `emu report`'s.)

use super::UsageError;
use clap::{Parser, Subcommand, ValueEnum};
use emu_core::log::{dump, DumpFormat, LogReader};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "emu log", about = "Read emu's per-packet logs")]
struct LogCli {
    #[command(subcommand)]
    action: LogAction,
}

#[derive(Subcommand)]
enum LogAction {
    /// Print every record of a log as CSV or JSON lines.
    Dump {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "csv")]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Csv,
    Json,
}

pub fn run(args: &[String]) -> Result<i32, UsageError> {
    let Some(cli) = super::parse_tool_args::<LogCli>("emu log", args)? else {
        return Ok(0);
    };
    let LogAction::Dump { file, format } = cli.action;
    let reader = match LogReader::open(&file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("emu: {e}");
            return Ok(1);
        }
    };
    let format = match format {
        Format::Csv => DumpFormat::Csv,
        Format::Json => DumpFormat::JsonLines,
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
