//! The controllers of a run: the thread that accepts them, and one thread
//! per controller that reads its requests, answers each with one line, and
//! sends its subscription's telemetry on time. A controller that goes away
//! mid-stream ends its thread and its subscription, nothing else.

use super::elements::{seconds, Elements};
use super::endpoint::{Endpoint, Stream};
use super::protocol::{self, Envelope, Request, VERSION};
use super::record::{Recorded, Recorder};
use emu_core::time::monotonic_now;
use emu_core::Nanos;
use serde_json::json;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest request line read; a longer one is refused and the
/// connection closed.
const MAX_LINE: usize = 64 * 1024;
/// How often an idle thread looks whether the run is ending.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// How long a line may wait for a controller that reads nothing (its
/// socket's buffer full of telemetry) before it is let go: the run's end
/// never waits on a controller.
const WRITE_GIVE_UP: Duration = Duration::from_secs(1);

/// What every controller's thread shares.
pub struct Control {
    pub elements: Elements,
    recorder: Recorder,
    stop: AtomicBool,
}

impl Control {
    pub fn new(elements: Elements, recorder: Recorder) -> Arc<Control> {
        Arc::new(Control {
            elements,
            recorder,
            stop: AtomicBool::new(false),
        })
    }

    /// Schedules the changes of a `control.jsonl` at their run times, as
    /// recorded again; the first refused ends the run's start.
    pub fn replay(&self, changes: &[Recorded]) -> Result<(), String> {
        for change in changes {
            let at = self
                .elements
                .apply(&change.settings, protocol::When::At(change.at), true)
                .map_err(|e| format!("--control-replay at {}: {e}", seconds(change.at)))?;
            self.recorder.record(at, &change.given);
        }
        Ok(())
    }
}

/// The accepting thread, and through it every controller's.
pub struct Server {
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Accepts controllers on `endpoint` until stopped.
    pub fn start(endpoint: Endpoint, control: Arc<Control>) -> std::io::Result<Server> {
        let shared = control.clone();
        let thread = std::thread::Builder::new()
            .name("emu-control".into())
            .spawn(move || accept_loop(endpoint, shared))?;
        Ok(Server {
            control,
            thread: Some(thread),
        })
    }

    /// Stops taking requests, ends every controller's connection and
    /// removes the socket; call before the pumps finish. Dropping the
    /// server (a run that failed on its way) does the same.
    pub fn stop(self) {}
}

impl Drop for Server {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn accept_loop(endpoint: Endpoint, control: Arc<Control>) {
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    while !control.stop.load(Ordering::Acquire) {
        match endpoint.accept() {
            Ok(Some(stream)) => {
                let control = control.clone();
                let spawned = std::thread::Builder::new()
                    .name("emu-control-client".into())
                    .spawn(move || serve(stream, &control));
                if let Ok(handle) = spawned {
                    sessions.push(handle);
                }
                sessions.retain(|s| !s.is_finished());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                eprintln!(
                    "emu: --control {}: {e}; no more controllers are taken",
                    endpoint.address()
                );
                break;
            }
        }
    }
    for session in sessions {
        let _ = session.join();
    }
    // The endpoint goes here, and a Unix socket's file with it.
}

/// A subscription: what is read, how often, and when next.
struct Watch {
    elements: Vec<usize>,
    every: Nanos,
    next: Nanos,
}

/// One controller, until it goes or the run ends.
fn serve(stream: Stream, control: &Control) {
    let Ok(reader) = stream.try_clone() else {
        return;
    };
    if stream.set_write_timeout(WRITE_GIVE_UP).is_err() {
        return;
    }
    let mut reader = BufReader::new(reader);
    let mut writer = stream;
    let mut watch: Option<Watch> = None;
    let greeting = json!({"emu_control": VERSION, "elements": control.elements.names(),
                          "t_ns": control.elements.run_time()});
    let mut ok = writeln!(writer, "{greeting}").is_ok();
    let mut line = Vec::new();
    while ok && !control.stop.load(Ordering::Acquire) {
        let now = monotonic_now();
        let wait = watch
            .as_ref()
            .map_or(LOOK_EVERY, |w| {
                Duration::from_nanos(w.next.saturating_sub(now))
            })
            .clamp(Duration::from_millis(1), LOOK_EVERY);
        if reader.get_ref().set_read_timeout(wait).is_err() {
            break;
        }
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break, // the controller closed its end
            Ok(_) if line.ends_with(b"\n") => {
                let text = String::from_utf8_lossy(&line).trim().to_string();
                line.clear();
                if !text.is_empty() {
                    let answer = answer(&text, control, &mut watch);
                    ok = writeln!(writer, "{answer}").is_ok();
                }
            }
            Ok(_) => break, // a last line without its newline: the end
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        if line.len() > MAX_LINE {
            let _ = writeln!(
                writer,
                "{}",
                protocol::refusal(
                    &None,
                    "a request longer than 64 KiB; the connection is closed"
                )
            );
            break;
        }
        if let Some(w) = watch.as_mut() {
            let now = monotonic_now();
            if now >= w.next {
                let reading = json!({"event": "telemetry", "t_ns": control.elements.run_time(),
                                     "elements": control.elements.read(&w.elements)});
                ok = ok && writeln!(writer, "{reading}").is_ok();
                // A reading late by more than an interval is not made up.
                w.next = (w.next + w.every).max(now + 1);
            }
        }
    }
    if let Some(w) = watch {
        control.elements.watch(&w.elements, false);
    }
}

/// The one line answering `text`.
fn answer(text: &str, control: &Control, watch: &mut Option<Watch>) -> String {
    let Envelope { id, request } = match protocol::parse(text) {
        Ok(envelope) => envelope,
        Err((id, error)) => return protocol::refusal(&id, &error),
    };
    let elements = &control.elements;
    match request {
        Request::Get { elements: names } => match elements.find(&names) {
            Ok(found) => protocol::reply(
                &id,
                json!({"t_ns": elements.run_time(), "elements": elements.read(&found)}),
            ),
            Err(e) => protocol::refusal(&id, &e),
        },
        Request::Set {
            settings,
            when,
            given,
        } => match elements.apply(&settings, when, false) {
            Ok(at) => {
                control.recorder.record(at, &given);
                protocol::reply(&id, json!({"at_ns": at, "at": seconds(at)}))
            }
            Err(e) => protocol::refusal(&id, &e),
        },
        Request::Watch {
            every,
            elements: names,
        } => match elements.find(&names) {
            Ok(found) => {
                if let Some(old) = watch.take() {
                    elements.watch(&old.elements, false);
                }
                elements.watch(&found, true);
                let names: Vec<&str> = found
                    .iter()
                    .map(|&k| elements.list[k].name.as_str())
                    .collect();
                let reply = protocol::reply(&id, json!({"every_ns": every, "elements": names}));
                *watch = Some(Watch {
                    elements: found,
                    every,
                    next: monotonic_now() + every,
                });
                reply
            }
            Err(e) => protocol::refusal(&id, &e),
        },
        Request::Unwatch => {
            if let Some(old) = watch.take() {
                elements.watch(&old.elements, false);
            }
            protocol::reply(&id, json!({}))
        }
    }
}
