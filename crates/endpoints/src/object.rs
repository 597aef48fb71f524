//! The compiled BPF object (`bpf/endpoints.bpf.c`, built by `build.rs`),
//! the names inside it that the loader relies on, and libbpf's messages.

use libbpf_rs::PrintLevel;
use std::sync::Mutex;

/// The object clang built from `bpf/`: every congestion control's
/// `struct_ops` map, the hosts' helpers and the map they share; its Prague
/// asks for AccECN (`TCP_CONG_NEEDS_ACCECN`).
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/endpoints.bpf.o"));
/// The same built for kernels without AccECN, which refuse that flag: its
/// Prague asks for RFC 3168 ECN only.
pub static OBJECT_RFC3168: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/endpoints-rfc3168.bpf.o"));

/// The map the SCE congestion controls and the hosts' helpers share: per
/// connection, a receiver's SCE echo state (`bpf/sce_echo.h`) and the
/// ESCE-acknowledged bytes a sender has seen.
pub const SCE_FLOWS: &str = "emu_sce_flows";
/// The map of flows' settings (the references' module parameters), per
/// network namespace and remote port (`bpf/params.h`).
pub const CC_PARAMS: &str = "emu_cc_params";
/// The maps every running emu shares: one emu's congestion controls and
/// helpers serve the others' connections too.
pub const SHARED: [&str; 2] = [SCE_FLOWS, CC_PARAMS];
/// The helper on a host's egress (ECT(1) for L4S senders, ESCE on SCE
/// receivers' ACKs, Not-ECT SYNs).
pub const EGRESS: &str = "emu_egress";
/// The helper on a host's ingress (counts ECT(1) arrivals and ESCE ACKs).
pub const INGRESS: &str = "emu_ingress";

/// Lines libbpf printed since the last [`take_messages`]: a failed load's
/// explanation (the verifier's log among them) goes into its error.
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// At most this many lines are kept: the end of a verifier log says why.
const KEPT: usize = 30;

fn keep(level: PrintLevel, message: String) {
    if std::env::var_os("EMU_BPF_DEBUG").is_some() {
        eprint!("libbpf: {message}");
    }
    if matches!(level, PrintLevel::Debug) {
        return;
    }
    if let Ok(mut lines) = MESSAGES.lock() {
        lines.extend(message.lines().map(str::to_string));
        let excess = lines.len().saturating_sub(KEPT);
        lines.drain(..excess);
    }
}

/// Sends libbpf's messages to [`take_messages`] (and to stderr when
/// `EMU_BPF_DEBUG` is set) instead of printing them as they come.
pub fn capture_messages() {
    let level = if std::env::var_os("EMU_BPF_DEBUG").is_some() {
        PrintLevel::Debug
    } else {
        PrintLevel::Info
    };
    libbpf_rs::set_print(Some((level, keep)));
}

/// libbpf's messages since the last call, one line each.
pub fn take_messages() -> Vec<String> {
    MESSAGES
        .lock()
        .map(|mut lines| std::mem::take(&mut *lines))
        .unwrap_or_default()
}
