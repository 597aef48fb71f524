//! `emu log dump FILE [--format csv|json]`: a binary packet log as text.
//! `emu log figures LOG...`: Pantheon's figures from Mahimahi-format logs.

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
    /// Pantheon's figures (throughput, 95th-percentile delay, loss) of
    /// Mahimahi-format link logs (mm-link --uplink-log), as JSON lines.
    Figures {
        logs: Vec<PathBuf>,
        /// Also draw Pantheon's throughput-delay plot here.
        #[arg(long)]
        svg: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Csv,
    Json,
}

pub fn run(args: &[String]) -> Result<i32, UsageError> {
    let cli = match LogCli::try_parse_from(
        std::iter::once("emu log".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            return Ok(0);
        }
        Err(e) => {
            return Err(UsageError(
                e.to_string()
                    .trim_start_matches("error: ")
                    .trim()
                    .to_string(),
            ))
        }
    };
    let (file, format) = match cli.action {
        LogAction::Dump { file, format } => (file, format),
        LogAction::Figures { logs, svg } => return figures(&logs, svg.as_deref()),
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

/// `emu log figures`: one JSON line per log, and optionally the plot.
fn figures(logs: &[PathBuf], svg: Option<&std::path::Path>) -> Result<i32, UsageError> {
    use report::mahimahi::{pantheon_figures, read_events, scatter_svg};
    if logs.is_empty() {
        return Err(UsageError(
            "log figures: give one or more Mahimahi-format logs".into(),
        ));
    }
    let mut points = Vec::new();
    for path in logs {
        let file = std::fs::File::open(path)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        let mut events = Vec::new();
        for event in read_events(std::io::BufReader::new(file)) {
            match event {
                Ok(e) => events.push(e),
                Err(e) => {
                    eprintln!("emu: {}: {e}", path.display());
                    return Ok(1);
                }
            }
        }
        let Some(f) = pantheon_figures(events) else {
            eprintln!("emu: {}: no packet left the link", path.display());
            return Ok(1);
        };
        println!(
            "{}",
            serde_json::json!({
                "log": path.display().to_string(),
                "throughput_mbps": f.throughput_mbps,
                "delay_p95_ms": f.delay_p95_ms,
                "loss": f.loss,
                "arrivals": f.arrivals,
                "departures": f.departures,
            })
        );
        let name = path.parent().and_then(|p| p.file_name()).map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        points.push((name, f));
    }
    if let Some(svg) = svg {
        std::fs::write(svg, scatter_svg(&points))
            .map_err(|e| UsageError(format!("{}: {e}", svg.display())))?;
    }
    Ok(0)
}
