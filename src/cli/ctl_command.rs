//! `emu ctl SOCKET set|queue|get|watch ...`: the control socket's client
//! (docs/guide.md, "Steering a running path"). It writes the protocol's
//! requests and prints the replies, as text or, with `--json`, as the
//! lines the socket sent.

use super::output::UsageError;
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use shells::control::Address;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

#[derive(Args)]
pub struct CtlArgs {
    /// The socket given to emu's --control: a path, or tcp:PORT, tcp:ADDRESS:PORT.
    socket: String,
    #[command(subcommand)]
    action: CtlAction,
}

#[derive(Args)]
struct Timing {
    /// Take the change this long after the request (e.g. 500ms) instead of now.
    #[arg(long, value_name = "TIME", conflicts_with = "at")]
    after: Option<String>,
    /// Take the change at this run time (e.g. 12s from the innermost shell's start).
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
}

#[derive(Subcommand)]
enum CtlAction {
    /// Set settings of the path's elements, all at one instant:
    /// SHELL.DIRECTION.SETTING=VALUE, with SETTING one of rate, delay,
    /// loss, jitter, queue (in place) or queue_replace.
    #[command(
        after_help = "Example: emu ctl /tmp/emu.sock set 0.uplink.rate=5mbit 0.uplink.delay=30ms"
    )]
    Set {
        /// e.g. 1.uplink.rate=5mbit 1.uplink.delay=30ms 0.downlink.loss=1%
        #[arg(required = true, value_name = "NAME=VALUE")]
        settings: Vec<String>,
        #[command(flatten)]
        timing: Timing,
    },
    /// Change a queue's parameters in place (tc qdisc change) or replace it
    /// (tc qdisc replace: what it holds is dropped).
    #[command(
        after_help = "Examples: emu ctl /tmp/emu.sock queue change 0.uplink \"codel target 10ms\"\n          \
                            emu ctl /tmp/emu.sock queue replace 0.uplink pie"
    )]
    Queue {
        #[arg(value_parser = ["change", "replace"])]
        how: String,
        /// The element, SHELL.DIRECTION (e.g. 0.uplink).
        element: String,
        /// The queue as --queue takes it (see emu queues).
        spec: String,
        #[command(flatten)]
        timing: Timing,
    },
    /// Print the elements' settings and counters.
    Get {
        /// Elements (e.g. 0.uplink); all when none are named.
        elements: Vec<String>,
        /// Print the reply as the socket sent it.
        #[arg(long)]
        json: bool,
    },
    /// Print the elements' telemetry every interval until interrupted.
    Watch {
        /// Elements (e.g. 0.uplink); all when none are named.
        elements: Vec<String>,
        /// The interval, at least 10ms.
        #[arg(long, value_name = "TIME", default_value = "1s")]
        every: String,
        /// Print each reading as the socket sent it (one JSON object a line).
        #[arg(long)]
        json: bool,
        /// Stop after this many readings.
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
}

/// Runs the client; a connection that fails or a refusal is said on
/// stderr with status 1 (the socket's answer, not the command line, was
/// wrong).
pub fn run(args: CtlArgs) -> Result<i32, UsageError> {
    match ask(args) {
        Ok(code) => Ok(code),
        Err(UsageError(message)) => {
            eprintln!("emu: {message}");
            Ok(1)
        }
    }
}

fn ask(args: CtlArgs) -> Result<i32, UsageError> {
    let mut socket = Socket::connect(&args.socket)?;
    match args.action {
        CtlAction::Set { settings, timing } => {
            let mut set = Map::new();
            for item in &settings {
                let (name, value) = item.split_once('=').ok_or_else(|| {
                    UsageError(format!(
                        "ctl set: '{item}' is not NAME=VALUE (e.g. 0.uplink.rate=5mbit)"
                    ))
                })?;
                set.insert(name.to_string(), json!(value));
            }
            change(&mut socket, set, &timing)
        }
        CtlAction::Queue {
            how,
            element,
            spec,
            timing,
        } => {
            let setting = if how == "change" {
                "queue"
            } else {
                "queue_replace"
            };
            let mut set = Map::new();
            set.insert(format!("{element}.{setting}"), json!(spec));
            change(&mut socket, set, &timing)
        }
        CtlAction::Get { elements, json } => {
            let reply = socket.ask(json!({"op": "get", "elements": elements}))?;
            if json {
                println!("{reply}");
            } else {
                print_reading(&reply, None);
            }
            Ok(0)
        }
        CtlAction::Watch {
            elements,
            every,
            json,
            count,
        } => watch(&mut socket, elements, &every, json, count),
    }
}

/// A set request; prints the instant it took effect.
fn change(
    socket: &mut Socket,
    set: Map<String, Value>,
    timing: &Timing,
) -> Result<i32, UsageError> {
    let mut request = json!({"op": "set", "set": set});
    if let Some(after) = &timing.after {
        request["after"] = json!(after);
    }
    if let Some(at) = &timing.at {
        request["at"] = json!(at);
    }
    let reply = socket.ask(request)?;
    println!("taken at run time {}", reply["at"].as_str().unwrap_or("?"));
    Ok(0)
}

fn watch(
    socket: &mut Socket,
    elements: Vec<String>,
    every: &str,
    json: bool,
    count: Option<u64>,
) -> Result<i32, UsageError> {
    socket.ask(json!({"op": "watch", "every": every, "elements": elements}))?;
    let mut before: Option<Value> = None;
    let mut seen = 0;
    while count.is_none_or(|c| seen < c) {
        let Some(line) = socket.line()? else {
            break; // the run ended
        };
        if json {
            println!("{line}");
        } else {
            print_reading(&line, before.as_ref());
        }
        let _ = std::io::stdout().flush();
        before = Some(line);
        seen += 1;
    }
    Ok(0)
}

/// One line per element: its settings, its queue, and (between two
/// readings) the rate it delivered.
fn print_reading(reading: &Value, before: Option<&Value>) {
    let t = reading["t_ns"].as_u64().unwrap_or(0) as f64 / 1e9;
    let Some(elements) = reading["elements"].as_object() else {
        return;
    };
    for (name, e) in elements {
        let mut line = format!("{t:9.3}s {name:<12}");
        match e["rate_bps"].as_u64() {
            Some(bps) => {
                line += &format!(
                    " rate {}",
                    emu_core::Rate::from_bits_per_sec(bps).map_or(String::new(), |r| r.to_string())
                )
            }
            None => line += " rate -",
        }
        if let Some(delay) = e["delay_ns"].as_u64() {
            line += &format!(
                " delay {}",
                emu_core::time::format_duration(delay).replace(' ', "")
            );
        }
        line += &format!(
            " queue {} pkts, delivered {} pkts, dropped {}",
            e["queue_packets"], e["delivered_packets"], e["dropped_packets"]
        );
        if let Some(earlier) = before {
            let bytes = |v: &Value| v["elements"][name]["delivered_bytes"].as_u64().unwrap_or(0);
            let dt = reading["t_ns"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(earlier["t_ns"].as_u64().unwrap_or(0));
            if dt > 0 {
                let mbit =
                    (bytes(reading).saturating_sub(bytes(earlier))) as f64 * 8.0 / dt as f64 * 1e3;
                line += &format!(", out {mbit:.2} Mbit/s");
            }
        }
        if let Some(p99) = e["sojourn_p99_ns"].as_u64() {
            line += &format!(", sojourn p99 {:.1} ms", p99 as f64 / 1e6);
        }
        println!("{line}");
    }
}

/// A connection to a control socket, past its greeting.
struct Socket {
    reader: Box<dyn BufRead>,
    writer: Box<dyn Write>,
    name: String,
}

impl Socket {
    fn connect(text: &str) -> Result<Socket, UsageError> {
        let address = Address::parse(text).map_err(|e| UsageError(format!("ctl: {e}")))?;
        let failed = |e: std::io::Error| {
            UsageError(format!(
                "ctl: cannot connect to {text}: {e} (is emu running with --control {text}?)"
            ))
        };
        let (reader, writer): (Box<dyn BufRead>, Box<dyn Write>) = match &address {
            Address::Unix(path) => {
                let stream = UnixStream::connect(path).map_err(failed)?;
                (
                    Box::new(BufReader::new(stream.try_clone().map_err(failed)?)),
                    Box::new(stream),
                )
            }
            Address::Tcp(at) => {
                let stream = std::net::TcpStream::connect(at).map_err(failed)?;
                (
                    Box::new(BufReader::new(stream.try_clone().map_err(failed)?)),
                    Box::new(stream),
                )
            }
        };
        let mut socket = Socket {
            reader,
            writer,
            name: text.to_string(),
        };
        match socket.line()? {
            Some(greeting) if greeting["emu_control"] == json!(1) => Ok(socket),
            _ => Err(UsageError(format!(
                "ctl: {text} does not speak emu's control protocol version 1"
            ))),
        }
    }

    /// The next line the socket sends; None once it closed.
    fn line(&mut self) -> Result<Option<Value>, UsageError> {
        let mut text = String::new();
        match self.reader.read_line(&mut text) {
            Ok(0) => Ok(None),
            Ok(_) => serde_json::from_str(&text).map(Some).map_err(|e| {
                UsageError(format!(
                    "ctl: {} sent a line that is not JSON: {e}",
                    self.name
                ))
            }),
            Err(e) => Err(UsageError(format!("ctl: reading {}: {e}", self.name))),
        }
    }

    /// Sends `request`; its reply, or the refusal as the error.
    fn ask(&mut self, request: Value) -> Result<Value, UsageError> {
        writeln!(self.writer, "{request}")
            .map_err(|e| UsageError(format!("ctl: writing to {}: {e}", self.name)))?;
        match self.line()? {
            Some(reply) if reply["ok"] == json!(true) => Ok(reply),
            Some(reply) => Err(UsageError(format!(
                "ctl: refused: {}",
                reply["error"].as_str().unwrap_or("no reason given")
            ))),
            None => Err(UsageError(format!(
                "ctl: {} closed before it answered (the run ended?)",
                self.name
            ))),
        }
    }
}
