//! `--tcp-info`: samples the TCP sockets of the command's namespace over
//! sock_diag ([`crate::accounting::tcp_info`]) on a thread of its own while the command
//! runs, into the log directory in the format `emu run` writes
//! (`tcp/tcp_info.csv` and `clock.json`), so `emu report` shows srtt and
//! cwnd beside the packets' delays for a shell run as for an experiment.

use crate::accounting::tcp_info::{csv_row, write_clock, DiagSocket, CSV_HEADER};
use crate::error::{Result, ShellError};
use crate::sys::netns::NetNs;
use crate::sys::privilege;
use emu_core::time::monotonic_now;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The samples file inside the log directory.
pub const SAMPLES_FILE: &str = "tcp/tcp_info.csv";

/// A running sampler; [`Sampler::stop`] takes a last sample and closes the
/// file.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `namespace` every `interval` into `log_dir`.
    pub fn start(namespace: &NetNs, log_dir: &Path, interval: Duration) -> Result<Sampler> {
        let mut socket = DiagSocket::open_in(namespace)?;
        let samples = log_dir.join(SAMPLES_FILE);
        let started = monotonic_now();
        let file = privilege::io_as_invoker(|| {
            std::fs::create_dir_all(log_dir.join("tcp"))?;
            write_clock(log_dir, started)?;
            let mut file = std::fs::File::create(&samples)?;
            writeln!(file, "{CSV_HEADER}")?;
            Ok(file)
        })
        .map_err(|e| ShellError::os(&format!("creating {}", samples.display()), e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("emu-tcp-info".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(file);
                let mut next = std::time::Instant::now();
                loop {
                    let last = stopping.load(Ordering::Acquire);
                    let elapsed = (monotonic_now() - started) as f64 / 1e9;
                    if let Ok(sockets) = socket.tcp_sockets() {
                        for sample in sockets {
                            // A full disk loses samples, never the run.
                            let _ = writeln!(out, "{}", csv_row(elapsed, &sample));
                        }
                    }
                    if last {
                        break;
                    }
                    next += interval;
                    let now = std::time::Instant::now();
                    if next < now {
                        next = now; // fell behind: skip, as a ticker would
                    }
                    std::thread::park_timeout(next - now);
                }
                let _ = out.flush();
            })
            .map_err(|e| ShellError::os("starting the TCP_INFO sampler", e))?;
        Ok(Sampler { stop, thread })
    }

    /// Takes one last sample and waits for the file to be written.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}
