//! The experiment file's schema: every section and key it may hold
//! (unknown keys are errors), read with each key's position kept for
//! messages. A flow's `scheme` is resolved into the kind it stands for
//! here; what needs more than one key is checked by the plan.
//!
//! ```toml
//! [run]
//! duration = "10s"
//!
//! [hosts.a]
//! side = "left"
//! delay = "10ms"          # side link, both directions
//! [hosts.b]
//! side = "right"
//! cc = "bbr"              # the host's default congestion control
//!
//! [bottleneck]
//! rate = "50mbit"
//! queue = "droptail packets 100"
//!
//! [[flows]]
//! from = "a"
//! to = "b"
//! cc = "cubic"
//! ```

use crate::file::units::{Bytes, Duration, RateValue};
use emu_core::time::NS_PER_SEC;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use toml::Spanned;

/// An error in an experiment, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentError(pub String);

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExperimentError {}

/// The whole file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    #[serde(default)]
    pub run: RunSection,
    pub hosts: BTreeMap<String, HostSection>,
    /// One table, or an array of tables for bottlenecks in series (the
    /// first nearest the left side).
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub bottleneck: Vec<LinkSection>,
    #[serde(default)]
    pub flows: Vec<FlowSection>,
    /// What `emu run --quick` changes: a smoke-test form of the experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<QuickSection>,
}

/// The quick form (`emu run --quick`): one repetition of a shorter run,
/// with the file's own overrides, e.g. fewer cells or earlier starts.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QuickSection {
    /// The run's length in the quick form; 5 s if absent.
    pub duration: Option<Duration>,
    /// Overrides as `--set` takes them (`KEY=VALUE`), applied before the
    /// command line's own: `set = ["bottleneck.rate=50mbit", "flows.1.start=2s"]`.
    #[serde(default)]
    pub set: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Names the output directory; the file's name without `.toml` if absent.
    pub name: Option<String>,
    #[serde(default = "default_duration")]
    pub duration: Duration,
    /// Seeds every random choice (loss models, queues' randomness); each
    /// repetition adds its number to it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Repetitions of every cell.
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// How often TCP_INFO is read (10 ms at the finest).
    #[serde(default = "default_sample_interval")]
    pub sample_interval: Duration,
    /// Where results go (`--out` overrides); `runs` if absent.
    pub out: Option<PathBuf>,
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// The hosts' devices hand over TCP super-packets (TSO), as the
    /// shells' devices do: at high rates a system call then carries tens
    /// of packets, while every link still sees each packet of the wire.
    /// Off by default: a host's super-packet reaches its side link as a
    /// burst of segments stamped at one instant, which makes flows a little
    /// less fair (the figures are in docs/guide.md, under Experiments).
    #[serde(default)]
    pub offload: bool,
    /// The lateness accepted for a write into a host, as the shells'
    /// `--slack`: the fabric's threads spin only for its wake-ups' lateness
    /// beyond it. `0us` makes deliveries exact to a few microseconds, at
    /// the CPU of a spin before each.
    #[serde(default = "default_slack")]
    pub slack: Duration,
    /// Groups of swept keys whose lists advance in step (equal lengths)
    /// instead of multiplying: `[["bottleneck.rate", "bottleneck.delay"]]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub together: Vec<Vec<String>>,
    /// In a study (a directory of experiments run together), the scenario
    /// this experiment is one variant of; `emu report` pairs the variants
    /// of a scenario cell by cell.
    pub scenario: Option<String>,
    /// Which variant of its scenario this is, e.g. "sce" or "l4s".
    pub variant: Option<String>,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            name: None,
            duration: default_duration(),
            seed: default_seed(),
            runs: default_runs(),
            sample_interval: default_sample_interval(),
            out: None,
            mtu: default_mtu(),
            offload: false,
            slack: default_slack(),
            together: Vec::new(),
            scenario: None,
            variant: None,
        }
    }
}

fn default_duration() -> Duration {
    Duration(10 * NS_PER_SEC)
}
fn default_seed() -> u64 {
    1
}
fn default_runs() -> u32 {
    1
}
fn default_sample_interval() -> Duration {
    Duration(100_000_000)
}
fn default_mtu() -> u32 {
    1500
}
fn default_slack() -> Duration {
    Duration(shells::DEFAULT_SLACK)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Left,
    Right,
}

/// The keys of a link direction, written once: they make a direction's
/// table, and the shared (both directions) keys of a host's side link and
/// of a bottleneck. The dynamics keys are the shells' flags with `_` for
/// `-` (the flag's own spelling is accepted too) and take the same texts:
/// `square = "40ms:190ms:10s"` is `emu delay --square 40ms:190ms:10s`.
macro_rules! link_tables {
    ($( $(#[$meta:meta])* $field:ident : $ty:ty ),* $(,)?) => {
        /// What one direction of a link may set; unset keys fall back to
        /// the link's shared keys, then to no delay, no bottleneck, no loss.
        #[derive(Debug, Clone, Default, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct DirectionSection {
            $( $(#[$meta])* pub $field: Option<$ty>, )*
        }

        impl DirectionSection {
            /// Each key from this direction, else from `shared`.
            pub(super) fn or(&self, shared: &DirectionSection) -> DirectionSection {
                DirectionSection {
                    $( $field: self.$field.clone().or_else(|| shared.$field.clone()), )*
                }
            }
        }

        #[derive(Debug, Clone, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct HostSection {
            pub side: Side,
            /// The host's default congestion control (net.ipv4.tcp_congestion_control).
            pub cc: Option<Spanned<String>>,
            /// net.ipv4.tcp_ecn: 0 off, 1 request and accept, 2 accept only.
            pub tcp_ecn: Option<u8>,
            /// Further net.* sysctls of the host's namespace.
            #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
            pub sysctl: BTreeMap<String, SysctlValue>,
            // The side link, both directions:
            $( $(#[$meta])* pub $field: Option<$ty>, )*
            /// From the host to its router.
            #[serde(default)]
            pub up: DirectionSection,
            /// From the router to the host.
            #[serde(default)]
            pub down: DirectionSection,
        }

        impl HostSection {
            /// The side link's keys for both directions.
            pub(super) fn shared(&self) -> DirectionSection {
                DirectionSection { $( $field: self.$field.clone(), )* }
            }
        }

        #[derive(Debug, Clone, Default, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct LinkSection {
            $( $(#[$meta])* pub $field: Option<$ty>, )*
            /// Left to right.
            #[serde(default)]
            pub forward: DirectionSection,
            /// Right to left.
            #[serde(default)]
            pub reverse: DirectionSection,
        }

        impl LinkSection {
            /// The bottleneck's keys for both directions.
            pub(super) fn shared(&self) -> DirectionSection {
                DirectionSection { $( $field: self.$field.clone(), )* }
            }
        }
    };
}

link_tables! {
    delay: Duration,
    rate: RateValue,
    /// A Mahimahi or emu trace file, relative to the experiment file.
    trace: Spanned<String>,
    /// A queue as the shells take it, e.g. "cake bandwidth 50mbit".
    queue: Spanned<String>,
    /// Probability of losing each packet (with `burst`: the mean loss rate).
    loss: f64,
    /// Framing bytes charged per packet by the rate or trace.
    overhead: u32,
    /// The link layer every queue and the rate count (`emu link --l2`):
    /// "none" (IP bytes, as on a TUN device) or "ethernet" (+14 bytes).
    l2: Spanned<String>,
    // The delay's dynamics (`emu delay`'s flags):
    jitter: Spanned<String>,
    correlation: Spanned<String>,
    distribution: Spanned<String>,
    reorder: bool,
    square: Spanned<String>,
    steps: Spanned<String>,
    walk: Spanned<String>,
    /// A file of "TIME DELAY" lines, relative to the experiment file.
    #[serde(alias = "delay-trace")]
    delay_trace: Spanned<String>,
    interpolate: bool,
    /// Play steps, a delay trace or a rate schedule once and hold the last value.
    once: bool,
    // The server's dynamics (`emu link`'s flags):
    #[serde(alias = "rate-steps")]
    rate_steps: Spanned<String>,
    /// A file of "TIME RATE" lines, relative to the experiment file.
    #[serde(alias = "rate-trace")]
    rate_trace: Spanned<String>,
    outage: Spanned<String>,
    onoff: Spanned<String>,
    #[serde(alias = "onoff-exp")]
    onoff_exp: Spanned<String>,
    aggregate: Spanned<String>,
    slot: Spanned<String>,
    /// `TIME=QUEUE,...` from 0s, in place of `queue` (`emu link --queue-steps`).
    #[serde(alias = "queue-steps")]
    queue_steps: Spanned<String>,
    /// `htb [burst BYTES]`: the rate enforced as htb does (`emu link --shaper`).
    shaper: Spanned<String>,
    // The loss model and mangling (`emu loss`'s flags; the models' values
    // separated by spaces, as on the command line: gemodel = "1% 30%"):
    gemodel: Spanned<String>,
    state: Spanned<String>,
    burst: Spanned<String>,
    duplicate: Spanned<String>,
    corrupt: Spanned<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SysctlValue {
    Number(i64),
    Text(String),
}

impl fmt::Display for SysctlValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysctlValue::Number(n) => write!(f, "{n}"),
            SysctlValue::Text(t) => f.write_str(t),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind {
    /// Kernel TCP (iperf3), with the congestion control by name.
    #[default]
    Tcp,
    /// UDP at a constant rate (iperf3), with an ECN codepoint.
    Udp,
    /// A latency probe: ICMP echo at an interval.
    Ping,
    /// Any command, run by `sh -c` on the `from` host.
    Command,
    /// A Pantheon scheme wrapper: `WRAPPER run_first` says which side
    /// starts; that side gets `WRAPPER SIDE PORT`, the other, `setup_time`
    /// later, `WRAPPER SIDE IP PORT` (the first side's host address). The
    /// sender runs on `from`, the receiver on `to`.
    Pantheon,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnCodepoint {
    #[default]
    NotEct,
    Ect1,
    Ect0,
    Ce,
}

impl EcnCodepoint {
    /// The two ECN bits of the TOS byte (RFC 3168).
    pub fn bits(self) -> u8 {
        match self {
            EcnCodepoint::NotEct => 0,
            EcnCodepoint::Ect1 => 1,
            EcnCodepoint::Ect0 => 2,
            EcnCodepoint::Ce => 3,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSection {
    /// Names the flow in results; `KIND-FROM-TO` (with its index) if absent.
    pub name: Option<String>,
    #[serde(default)]
    pub kind: FlowKind,
    pub from: Spanned<String>,
    pub to: Option<Spanned<String>>,
    /// TCP: the congestion control; the sending host's default if absent.
    pub cc: Option<Spanned<String>>,
    /// UDP: the sending rate.
    pub rate: Option<RateValue>,
    /// UDP: the ECN codepoint of every packet.
    pub ecn: Option<EcnCodepoint>,
    /// UDP: payload bytes per datagram.
    pub size: Option<u32>,
    /// TCP: the IP TOS byte of the sender's packets, DSCP in its upper six
    /// bits (`0x10` is DSCP 4); the two ECN bits stay the sender's stack's.
    pub tos: Option<u32>,
    /// Ping: time between probes.
    pub interval: Option<Duration>,
    /// Command: run with `sh -c` on the `from` host.
    pub command: Option<String>,
    /// Pantheon: the scheme's wrapper, an executable relative to the
    /// experiment file (Pantheon's `src/wrappers/SCHEME.py`).
    pub wrapper: Option<Spanned<String>>,
    /// A scheme in place of `kind` with `wrapper` or `cc`: a Pantheon
    /// wrapper (a path with a `/` or ending in `.py`, relative to the
    /// file) or a kernel congestion control by name. A list of them is a
    /// scheme comparison (see `crate::results::schemes`).
    pub scheme: Option<Spanned<String>>,
    /// Pantheon: how long the side that runs first gets before the other
    /// starts (Pantheon's run_first_setup_time); 3s if absent.
    pub setup_time: Option<Duration>,
    #[serde(default)]
    pub start: Duration,
    /// Until the end of the run if absent.
    pub duration: Option<Duration>,
    /// TCP: send this many bytes instead of for a duration.
    pub bytes: Option<Bytes>,
    /// TCP and UDP: leave the flow's first stretch (its start-up) out of
    /// its goodput and retransmits (iperf3 --omit, in whole seconds).
    pub omit: Option<Duration>,
    /// Identical flows side by side.
    #[serde(default = "default_count")]
    pub count: u32,
}

fn default_count() -> u32 {
    1
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<LinkSection>, D::Error> {
    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
    struct OneOrMany;
    impl<'de> serde::de::Visitor<'de> for OneOrMany {
        type Value = Vec<LinkSection>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a table [bottleneck] or tables [[bottleneck]]")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            LinkSection::deserialize(MapAccessDeserializer::new(map)).map(|one| vec![one])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::<LinkSection>::deserialize(SeqAccessDeserializer::new(seq))
        }
    }
    // Handing the map or sequence on as it is keeps the positions of its
    // values, which messages and spanned keys need.
    d.deserialize_any(OneOrMany)
}

/// Where a file's text is, for messages: line of a byte offset.
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    pub(super) fn at<T>(
        &self,
        spanned: &Spanned<T>,
        key: &str,
        message: impl fmt::Display,
    ) -> ExperimentError {
        let line = self.text[..spanned.span().start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        ExperimentError(format!("{}: line {line}, key {key}: {message}", self.file))
    }

    pub(super) fn key(&self, key: &str, message: impl fmt::Display) -> ExperimentError {
        ExperimentError(format!("{}: key {key}: {message}", self.file))
    }
}

/// Reads an experiment from `text` (one cell: no lists left).
pub fn parse(source: &Source) -> Result<Experiment, ExperimentError> {
    let mut experiment: Experiment = toml::from_str(source.text)
        .map_err(|e| ExperimentError(format!("{}: {}", source.file, e.to_string().trim_end())))?;
    for (f, flow) in experiment.flows.iter_mut().enumerate() {
        resolve_scheme(source, flow, &format!("flows.{f}"))?;
    }
    Ok(experiment)
}

/// Turns a flow's `scheme` into the `kind` and `wrapper` or `cc` it
/// stands for. A kernel congestion control's flow is TCP and takes no
/// `setup_time`: one file compares wrappers and kernel controls alike.
fn resolve_scheme(
    source: &Source,
    flow: &mut FlowSection,
    key: &str,
) -> Result<(), ExperimentError> {
    let Some(scheme) = flow.scheme.take() else {
        return Ok(());
    };
    let text = scheme.get_ref();
    let wrapper = text.contains('/') || text.ends_with(".py");
    let kind = if wrapper {
        FlowKind::Pantheon
    } else {
        FlowKind::Tcp
    };
    if flow.cc.is_some() || flow.wrapper.is_some() || !matches!(flow.kind, FlowKind::Tcp) {
        return Err(source.at(
            &scheme,
            &format!("{key}.scheme"),
            "a scheme stands for kind with wrapper or cc: leave those out",
        ));
    }
    flow.kind = kind;
    if wrapper {
        flow.wrapper = Some(scheme);
    } else {
        flow.cc = Some(scheme);
        flow.setup_time = None;
    }
    Ok(())
}

pub fn kind_name(kind: FlowKind) -> &'static str {
    match kind {
        FlowKind::Tcp => "tcp",
        FlowKind::Udp => "udp",
        FlowKind::Ping => "ping",
        FlowKind::Command => "command",
        FlowKind::Pantheon => report::experiments::results_schema::PANTHEON_KIND,
    }
}
