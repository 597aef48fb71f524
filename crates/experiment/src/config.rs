//! The experiment file: its schema (unknown keys are errors), the checks
//! that need more than one key, and the plan a run follows (every default
//! filled in).
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

use crate::units::{Bytes, Duration, RateValue};
use emu_core::time::{format_duration, NS_PER_SEC};
use emu_core::trace::Trace;
use emu_core::Nanos;
use link::Server;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
            fn or(&self, shared: &DirectionSection) -> DirectionSection {
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
            fn shared(&self) -> DirectionSection {
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
            fn shared(&self) -> DirectionSection {
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
    /// scheme comparison (see `crate::schemes`).
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

/// One direction of one link, resolved: what a shell's direction is, so
/// both are built by the same constructor (`shells::links`).
pub type DirectionPlan = shells::DirectionSpec;

/// A host, resolved: its address, sysctls and side link.
#[derive(Debug, Clone)]
pub struct HostPlan {
    pub name: String,
    pub side: Side,
    pub address: Ipv4Addr,
    pub sysctls: Vec<(String, String)>,
    /// The settings of its congestion control (one of emu's), for every
    /// connection of its namespace that a flow's own do not cover.
    pub cc_settings: Option<endpoints::Settings>,
    /// Host to router, router to host.
    pub up: DirectionPlan,
    pub down: DirectionPlan,
}

/// One flow (a `count` of N gives N of these), resolved.
#[derive(Debug, Clone)]
pub struct FlowPlan {
    pub name: String,
    pub kind: FlowKind,
    pub from: usize,
    pub to: Option<usize>,
    /// The congestion control's name (its settings apart).
    pub cc: Option<String>,
    /// The settings of its congestion control (one of emu's): its own, or
    /// its sending host's where it names none.
    pub cc_settings: Option<endpoints::Settings>,
    pub rate: Option<RateValue>,
    pub ecn: EcnCodepoint,
    pub size: u32,
    pub interval: Nanos,
    pub command: Option<String>,
    /// Pantheon: the wrapper, which side runs first, and the time it gets.
    pub pantheon: Option<PantheonPlan>,
    pub start: Nanos,
    pub duration: Nanos,
    pub bytes: Option<u64>,
    pub omit: Nanos,
    /// The receiving port (TCP and UDP flows).
    pub port: u16,
}

/// Which side of a Pantheon scheme starts first (its `run_first` answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PantheonSide {
    Sender,
    Receiver,
}

impl PantheonSide {
    pub fn name(self) -> &'static str {
        match self {
            PantheonSide::Sender => "sender",
            PantheonSide::Receiver => "receiver",
        }
    }

    pub fn other(self) -> PantheonSide {
        match self {
            PantheonSide::Sender => PantheonSide::Receiver,
            PantheonSide::Receiver => PantheonSide::Sender,
        }
    }
}

/// A Pantheon flow, resolved.
#[derive(Debug, Clone)]
pub struct PantheonPlan {
    pub wrapper: PathBuf,
    pub first: PantheonSide,
    pub setup_time: Nanos,
}

/// Everything a run needs, every default filled in.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub run: RunSection,
    pub hosts: Vec<HostPlan>,
    /// Forward (left to right) and reverse, per bottleneck.
    pub bottlenecks: Vec<[DirectionPlan; 2]>,
    pub flows: Vec<FlowPlan>,
    /// What the file asks for that runs, but likely not as meant (a flow
    /// between two hosts on the same side, which never crosses the
    /// bottleneck).
    pub warnings: Vec<String>,
}

/// The first port flows receive on.
pub const FIRST_PORT: u16 = 5201;

/// Where a file's text is, for messages: line of a byte offset.
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    fn at<T>(
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

    fn key(&self, key: &str, message: impl fmt::Display) -> ExperimentError {
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

/// The congestion controls of this kernel.
#[derive(Debug, Clone, Default)]
pub struct CongestionControls {
    /// Loaded: a socket may use any of them (emu runs as root).
    pub available: Vec<String>,
    /// Those the kernel also lets a namespace other than the first take
    /// as its default (tcp_allowed_congestion_control); for any other,
    /// setting the default there fails with EPERM.
    pub allowed: Vec<String>,
}

/// Checks what one key cannot (host names, congestion controls, queue
/// specs, traces) and resolves every default. `base` is the directory
/// relative paths are read from; `controls` the kernel's congestion
/// controls; `run_first` puts the question to a Pantheon wrapper
/// (`WRAPPER run_first`, `system::run_first`). What the machine says is
/// given, asked before the checks, not inside them.
pub fn plan(
    experiment: &Experiment,
    source: &Source,
    default_name: &str,
    base: &Path,
    controls: &CongestionControls,
    run_first: &dyn Fn(&Path) -> Result<PantheonSide, String>,
) -> Result<Plan, ExperimentError> {
    let run = &experiment.run;
    check_run(run, source)?;
    let hosts = plan_hosts(experiment, source, base, controls)?;
    let bottlenecks = plan_bottlenecks(experiment, source, base)?;
    let context = FlowContext {
        experiment,
        source,
        base,
        controls,
        run_first,
        hosts: &hosts,
    };
    let mut flows = Vec::new();
    let mut port = FIRST_PORT;
    for (f, flow) in experiment.flows.iter().enumerate() {
        plan_flow(&context, f, flow, &mut flows, &mut port)?;
    }
    if flows.is_empty() {
        return Err(source.key("flows", "an experiment needs at least one flow"));
    }
    let warnings = same_side_warnings(&flows, &hosts);
    Ok(Plan {
        name: run.name.clone().unwrap_or_else(|| default_name.to_string()),
        run: run.clone(),
        hosts,
        bottlenecks,
        flows,
        warnings,
    })
}

/// The `[run]` section's bounds.
fn check_run(run: &RunSection, source: &Source) -> Result<(), ExperimentError> {
    if run.runs == 0 {
        return Err(source.key("run.runs", "must be at least 1"));
    }
    if run.sample_interval.0 < 10_000_000 {
        return Err(source.key("run.sample_interval", "must be at least 10ms"));
    }
    if run.duration.0 == 0 {
        return Err(source.key("run.duration", "must be longer than 0"));
    }
    if !(576..=9000).contains(&run.mtu) {
        return Err(source.key("run.mtu", "must be between 576 and 9000"));
    }
    Ok(())
}

/// A congestion control named at `key` (`"prague ecn_fallback=1"`): one
/// the kernel has, then the settings of one of emu's, if any.
fn check_cc(
    controls: &CongestionControls,
    source: &Source,
    cc: &Spanned<String>,
    key: &str,
) -> Result<Option<endpoints::Settings>, ExperimentError> {
    let available = &controls.available;
    let (name, settings) = endpoints::parameters::split(cc.get_ref());
    if name.is_empty() {
        return Err(source.at(
            cc,
            key,
            format!(
                "is empty: name a congestion control ({}), or leave the key out for the machine's default",
                available.join(", ")
            ),
        ));
    }
    if !available.iter().any(|a| a == name) {
        return Err(source.at(
            cc,
            key,
            format!(
                "congestion control '{name}' is not available in this kernel (available: {}); load its module (modprobe tcp_{name}) or pick one of those",
                available.join(", "),
            ),
        ));
    }
    if settings.is_empty() {
        return Ok(None);
    }
    let Some(endpoint) = endpoints::find(name) else {
        return Err(source.at(
            cc,
            key,
            endpoints::parameters::kernels_refused(name, settings),
        ));
    };
    endpoints::parameters::parse(endpoint, settings)
        .map(Some)
        .map_err(|message| source.at(cc, key, message))
}

/// The congestion control's name alone, without its settings.
fn cc_name(cc: &Spanned<String>) -> String {
    endpoints::parameters::split(cc.get_ref()).0.to_string()
}

/// The hosts, in the order of their names, each with its address (10.0.0.1
/// on), its sysctls and its side link.
fn plan_hosts(
    experiment: &Experiment,
    source: &Source,
    base: &Path,
    controls: &CongestionControls,
) -> Result<Vec<HostPlan>, ExperimentError> {
    if experiment.hosts.is_empty() {
        return Err(source.key("hosts", "an experiment needs at least two hosts"));
    }
    if experiment.hosts.len() > 250 {
        return Err(source.key("hosts", "at most 250 hosts"));
    }
    let mut hosts = Vec::new();
    for (index, (name, host)) in experiment.hosts.iter().enumerate() {
        check_name(name).map_err(|m| source.key(&format!("hosts.{name}"), m))?;
        let sysctls = host_sysctls(name, host, source, controls)?;
        let cc_settings = match &host.cc {
            Some(cc) => check_cc(controls, source, cc, &format!("hosts.{name}.cc"))?,
            None => None,
        };
        let shared = host.shared();
        let key = format!("hosts.{name}");
        hosts.push(HostPlan {
            name: name.clone(),
            side: host.side,
            address: Ipv4Addr::new(10, 0, 0, index as u8 + 1),
            sysctls,
            cc_settings,
            up: direction(&host.up, &shared, source, &format!("{key}.up"), base)?,
            down: direction(&host.down, &shared, source, &format!("{key}.down"), base)?,
        });
    }
    Ok(hosts)
}

/// The sysctls of host `name`'s namespace: its congestion control where
/// the kernel lets a namespace take it as default, `tcp_ecn`, and its own
/// `net.*` keys.
fn host_sysctls(
    name: &str,
    host: &HostSection,
    source: &Source,
    controls: &CongestionControls,
) -> Result<Vec<(String, String)>, ExperimentError> {
    let mut sysctls = Vec::new();
    if let Some(cc) = &host.cc {
        check_cc(controls, source, cc, &format!("hosts.{name}.cc"))?;
        // The host's TCP flows get it by name in any case; the
        // namespace's default is set where the kernel allows it.
        let name = cc_name(cc);
        if controls.allowed.contains(&name) {
            sysctls.push(("net.ipv4.tcp_congestion_control".to_string(), name));
        }
    }
    if let Some(ecn) = host.tcp_ecn {
        if ecn > 2 {
            return Err(source.key(&format!("hosts.{name}.tcp_ecn"), "must be 0, 1 or 2"));
        }
        sysctls.push(("net.ipv4.tcp_ecn".to_string(), ecn.to_string()));
    }
    for (key, value) in &host.sysctl {
        if !key.starts_with("net.") {
            return Err(source.key(
                &format!("hosts.{name}.sysctl"),
                format!("'{key}': only net.* sysctls belong to a host's namespace"),
            ));
        }
        sysctls.push((key.clone(), value.to_string()));
    }
    Ok(sysctls)
}

/// Each bottleneck's two directions, left to right and back.
fn plan_bottlenecks(
    experiment: &Experiment,
    source: &Source,
    base: &Path,
) -> Result<Vec<[DirectionPlan; 2]>, ExperimentError> {
    let mut bottlenecks = Vec::new();
    for (b, link) in experiment.bottleneck.iter().enumerate() {
        let shared = link.shared();
        let key = if experiment.bottleneck.len() == 1 {
            "bottleneck".to_string()
        } else {
            format!("bottleneck.{b}")
        };
        bottlenecks.push([
            direction(
                &link.forward,
                &shared,
                source,
                &format!("{key}.forward"),
                base,
            )?,
            direction(
                &link.reverse,
                &shared,
                source,
                &format!("{key}.reverse"),
                base,
            )?,
        ]);
    }
    Ok(bottlenecks)
}

/// What planning a flow needs besides the flow.
struct FlowContext<'a> {
    experiment: &'a Experiment,
    source: &'a Source<'a>,
    base: &'a Path,
    controls: &'a CongestionControls,
    run_first: &'a dyn Fn(&Path) -> Result<PantheonSide, String>,
    hosts: &'a [HostPlan],
}

/// The keys each kind of flow takes besides those every flow takes
/// (`kind`, `from`, `to`, `name`, `start`, `duration`, `count`).
fn flow_keys(kind: FlowKind) -> &'static [&'static str] {
    match kind {
        FlowKind::Tcp => &["cc", "bytes", "omit"],
        FlowKind::Udp => &["rate", "ecn", "size", "omit"],
        FlowKind::Ping => &["interval"],
        FlowKind::Pantheon => &["wrapper", "setup_time"],
        FlowKind::Command => &["command"],
    }
}

/// The key a kind of flow cannot do without, and what its absence says.
fn required_flow_key(kind: FlowKind) -> Option<(&'static str, &'static str)> {
    match kind {
        FlowKind::Tcp | FlowKind::Ping => None,
        FlowKind::Udp => Some(("rate", "missing: a UDP flow needs a rate")),
        FlowKind::Pantheon => Some((
            "wrapper",
            "missing: the scheme's wrapper (e.g. pantheon/src/wrappers/bbr.py)",
        )),
        FlowKind::Command => Some(("command", "missing: the command to run (with sh -c)")),
    }
}

/// Which of the keys only some kinds of flow take `flow` gives.
fn given_flow_keys(flow: &FlowSection) -> [(&'static str, bool); 10] {
    [
        ("cc", flow.cc.is_some()),
        ("bytes", flow.bytes.is_some()),
        ("rate", flow.rate.is_some()),
        ("ecn", flow.ecn.is_some()),
        ("size", flow.size.is_some()),
        ("interval", flow.interval.is_some()),
        ("command", flow.command.is_some()),
        ("omit", flow.omit.is_some()),
        ("wrapper", flow.wrapper.is_some()),
        ("setup_time", flow.setup_time.is_some()),
    ]
}

/// Flow `f` of the file, checked, as `count` plans with their ports.
fn plan_flow(
    context: &FlowContext,
    f: usize,
    flow: &FlowSection,
    flows: &mut Vec<FlowPlan>,
    port: &mut u16,
) -> Result<(), ExperimentError> {
    let (source, hosts) = (context.source, context.hosts);
    let key = format!("flows.{f}");
    let (from, to) = flow_ends(context, flow, &key)?;
    check_flow_keys(context, flow, &key)?;
    let duration = flow_duration(&context.experiment.run, source, flow, &key)?;
    let omit = flow.omit.map_or(0, |o| o.0);
    if !omit.is_multiple_of(NS_PER_SEC) || omit + NS_PER_SEC > duration {
        return Err(source.key(
            &format!("{key}.omit"),
            "whole seconds, at least one second shorter than the flow",
        ));
    }
    if flow.count == 0 {
        return Err(source.key(&format!("{key}.count"), "must be at least 1"));
    }
    let pantheon = plan_pantheon(context, flow, &key, duration)?;
    let base_name = match &flow.name {
        Some(name) => {
            check_name(name).map_err(|m| source.key(&format!("{key}.name"), m))?;
            name.clone()
        }
        None => {
            let to = to
                .map(|t| format!("-{}", hosts[t].name))
                .unwrap_or_default();
            format!("{f}-{}-{}{to}", kind_name(flow.kind), hosts[from].name)
        }
    };
    let host_cc = context.experiment.hosts.iter().nth(from);
    let (cc, cc_key) = match (&flow.cc, host_cc) {
        (Some(cc), _) => (Some(cc), format!("{key}.cc")),
        (None, Some((host, section))) => (section.cc.as_ref(), format!("hosts.{host}.cc")),
        (None, None) => (None, String::new()),
    };
    let cc_settings = match (flow.kind, cc) {
        (FlowKind::Tcp, Some(cc)) => check_cc(context.controls, source, cc, &cc_key)?,
        _ => None,
    };
    for copy in 0..flow.count {
        let name = if flow.count == 1 {
            base_name.clone()
        } else {
            format!("{base_name}.{copy}")
        };
        if flows.iter().any(|p: &FlowPlan| p.name == name) {
            return Err(source.key(
                &format!("{key}.name"),
                format!("two flows are named '{name}'"),
            ));
        }
        flows.push(FlowPlan {
            name,
            kind: flow.kind,
            from,
            to,
            cc: cc.map(cc_name),
            cc_settings: cc_settings.clone(),
            rate: flow.rate,
            ecn: flow.ecn.unwrap_or_default(),
            size: flow.size.unwrap_or(1200),
            interval: flow.interval.map(|i| i.0).unwrap_or(100_000_000),
            command: flow.command.clone(),
            pantheon: pantheon.clone(),
            start: flow.start.0,
            duration,
            bytes: flow.bytes.map(|b| b.0),
            omit,
            port: *port,
        });
        *port = port
            .checked_add(1)
            .ok_or_else(|| source.key("flows", "too many flows"))?;
    }
    Ok(())
}

/// The hosts a flow goes from and to (a command flow may have no `to`).
fn flow_ends(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
) -> Result<(usize, Option<usize>), ExperimentError> {
    let (experiment, source) = (context.experiment, context.source);
    let host_index = |name: &Spanned<String>, key: &str| -> Result<usize, ExperimentError> {
        experiment
            .hosts
            .keys()
            .position(|h| h == name.get_ref())
            .ok_or_else(|| {
                source.at(
                    name,
                    key,
                    format!(
                        "no host named '{}' (hosts: {})",
                        name.get_ref(),
                        experiment
                            .hosts
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    };
    let from = host_index(&flow.from, &format!("{key}.from"))?;
    let to = match &flow.to {
        Some(to) => Some(host_index(to, &format!("{key}.to"))?),
        None if flow.kind == FlowKind::Command => None,
        None => return Err(source.key(&format!("{key}.to"), "missing: the receiving host")),
    };
    if to == Some(from) {
        return Err(source.key(
            &format!("{key}.to"),
            "a flow's ends must be different hosts",
        ));
    }
    Ok((from, to))
}

/// A flow's kind-specific keys: a TCP flow's congestion control is the
/// kernel's, the key its kind needs is there, and no key belongs to
/// another kind.
fn check_flow_keys(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
) -> Result<(), ExperimentError> {
    let source = context.source;
    if let (FlowKind::Tcp, Some(cc)) = (flow.kind, &flow.cc) {
        check_cc(context.controls, source, cc, &format!("{key}.cc"))?;
    }
    let given = given_flow_keys(flow);
    if let Some((required, missing)) = required_flow_key(flow.kind) {
        if !given.iter().any(|&(name, given)| given && name == required) {
            return Err(source.key(&format!("{key}.{required}"), missing));
        }
    }
    let allowed = flow_keys(flow.kind);
    for (name, given) in given {
        if given && !allowed.contains(&name) {
            return Err(source.key(
                &format!("{key}.{name}"),
                format!(
                    "does not apply to a {} flow (it takes: {})",
                    kind_name(flow.kind),
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// How long a flow runs: its own duration, or to the run's end from its
/// start; at least 1s unless it is a command or sends a number of bytes.
fn flow_duration(
    run: &RunSection,
    source: &Source,
    flow: &FlowSection,
    key: &str,
) -> Result<Nanos, ExperimentError> {
    if flow.start.0 >= run.duration.0 {
        return Err(source.key(&format!("{key}.start"), "starts after the run ends"));
    }
    let duration = flow
        .duration
        .map(|d| d.0)
        .unwrap_or(run.duration.0 - flow.start.0);
    if duration < NS_PER_SEC && flow.kind != FlowKind::Command && flow.bytes.is_none() {
        // Without a duration of its own, the flow runs to the run's
        // end: the run's duration (or the flow's start) is at fault.
        return Err(match flow.duration {
            Some(_) => source.key(&format!("{key}.duration"), "must be at least 1s"),
            None => source.key(
                "run.duration",
                format!(
                    "leaves {key}, which runs to the end from its start at {}, {} where \
                     a flow needs at least 1s (a bare number is milliseconds)",
                    format_duration(flow.start.0),
                    format_duration(duration)
                ),
            ),
        });
    }
    Ok(duration)
}

/// A Pantheon flow's wrapper, the side it says runs first, and the time
/// the other side waits.
fn plan_pantheon(
    context: &FlowContext,
    flow: &FlowSection,
    key: &str,
    duration: Nanos,
) -> Result<Option<PantheonPlan>, ExperimentError> {
    let Some(wrapper) = &flow.wrapper else {
        return Ok(None);
    };
    let source = context.source;
    let setup_time = flow.setup_time.map_or(3 * NS_PER_SEC, |t| t.0);
    if setup_time + NS_PER_SEC > duration {
        return Err(source.key(
            &format!("{key}.setup_time"),
            "must leave the flow at least 1s after it",
        ));
    }
    let path = context.base.join(wrapper.get_ref());
    let first =
        (context.run_first)(&path).map_err(|e| source.at(wrapper, &format!("{key}.wrapper"), e))?;
    Ok(Some(PantheonPlan {
        wrapper: path,
        first,
        setup_time,
    }))
}

/// A warning for each flow between two hosts of one side: it never
/// crosses the bottleneck.
fn same_side_warnings(flows: &[FlowPlan], hosts: &[HostPlan]) -> Vec<String> {
    flows
        .iter()
        .filter_map(|f| {
            let (from, to) = (&hosts[f.from], &hosts[f.to?]);
            (from.side == to.side).then(|| {
                format!(
                    "flow {}: hosts {} and {} are both on the {} side, so it never crosses the bottleneck",
                    f.name,
                    from.name,
                    to.name,
                    side_name(from.side)
                )
            })
        })
        .collect()
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Left => "left",
        Side::Right => "right",
    }
}

pub fn kind_name(kind: FlowKind) -> &'static str {
    match kind {
        FlowKind::Tcp => "tcp",
        FlowKind::Udp => "udp",
        FlowKind::Ping => "ping",
        FlowKind::Command => "command",
        FlowKind::Pantheon => "pantheon",
    }
}

/// Names become file and directory names.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 40
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return Err(format!(
            "'{name}' is not a usable name: letters, digits, '-', '_' and '.', at most 40"
        ));
    }
    Ok(())
}

/// One direction of a link, resolved from its keys (its own, else the
/// link's): its server, queue, loss and delay, with every path dynamic
/// read by the shells' own option parsers.
fn direction(
    own: &DirectionSection,
    shared: &DirectionSection,
    source: &Source,
    key: &str,
    base: &Path,
) -> Result<DirectionPlan, ExperimentError> {
    use link::options::OptionError;
    let keys = own.or(shared);
    // An option's error, at its key's line when the key has one.
    let at = |e: OptionError| {
        let name = e.option.replace('-', "_");
        let key = format!("{key}.{name}");
        match spanned_key(&keys, &name) {
            Some(spanned) => source.at(spanned, &key, e.problem),
            None => source.key(&key, e.problem),
        }
    };
    let server = own_server(&keys, source, key, base)?;
    let queue = match &keys.queue {
        Some(q) => aqm::QueueSpec::parse(q.get_ref())
            .map_err(|e| source.at(q, &format!("{key}.queue"), e))?,
        None => aqm::QueueSpec::Infinite,
    };
    let loss = keys.loss.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&loss) {
        return Err(source.key(&format!("{key}.loss"), "a probability between 0 and 1"));
    }
    let delay = keys.delay.map(|d| d.0).unwrap_or(0);
    let once = keys.once.unwrap_or(false);
    let (mut delay_dynamics, _) = delay_options(&keys, base, once)
        .parse(keys.delay.map(|d| d.0))
        .map_err(at)?;
    let server_dynamics = link_options(&keys, base).parse(once).map_err(at)?;
    if server_dynamics.rate_given_twice(true, !matches!(server, Server::Unlimited)) {
        let option = if keys.rate_steps.is_some() {
            "rate_steps"
        } else {
            "rate_trace"
        };
        return Err(source.key(
            &format!("{key}.{option}"),
            "a rate schedule gives the rate itself: leave out rate and trace",
        ));
    }
    let server = server_dynamics.server_or(server);
    delay_dynamics.aggregate = server_dynamics.aggregate;
    let loss_options = loss_options(&keys);
    if loss_options.is_markov() && keys.loss.is_some() {
        return Err(source.key(
            &format!("{key}.loss"),
            "gemodel and state give the loss themselves: leave out loss",
        ));
    }
    let mangling = loss_options.parse(Some(loss)).map_err(at)?;
    let link_layer = match &keys.l2 {
        Some(l2) => emu_core::size::LinkLayer::parse(l2.get_ref())
            .map_err(|e| source.at(l2, &format!("{key}.l2"), e))?,
        None => emu_core::size::LinkLayer::None,
    };
    Ok(DirectionPlan {
        link_layer,
        delay,
        server,
        queue,
        loss: mangling.pattern.unwrap_or(link::Pattern::Bernoulli(loss)),
        overhead: keys.overhead.unwrap_or(0),
        dynamics: link::Dynamics {
            delay: delay_dynamics,
            outages: server_dynamics.outages,
            duplicate: mangling.duplicate,
            corrupt: mangling.corrupt,
            // The link's seed and streams are given where it is built.
            ..link::Dynamics::default()
        },
    })
}

/// A direction's own server: its rate or its trace (read relative to
/// `base`), not both; none at all leaves it unlimited.
fn own_server(
    keys: &DirectionSection,
    source: &Source,
    key: &str,
    base: &Path,
) -> Result<Server, ExperimentError> {
    Ok(match (keys.rate, keys.trace.as_ref()) {
        (Some(_), Some(trace)) => {
            return Err(source.at(trace, key, "give a rate or a trace, not both"));
        }
        (Some(rate), None) => Server::Rate(rate.0),
        (None, Some(trace)) => {
            let path = base.join(trace.get_ref());
            let loaded =
                Trace::load(&path).map_err(|e| source.at(trace, &format!("{key}.trace"), e))?;
            Server::Trace {
                trace: Arc::new(loaded),
                repeat: !keys.once.unwrap_or(false),
            }
        }
        (None, None) => Server::Unlimited,
    })
}

/// A text key's value.
fn text(value: &Option<Spanned<String>>) -> Option<String> {
    value.as_ref().map(|v| v.get_ref().clone())
}

/// A path key's value, relative to `base`.
fn path_in(base: &Path, value: &Option<Spanned<String>>) -> Option<PathBuf> {
    value.as_ref().map(|v| base.join(v.get_ref()))
}

/// The delay's dynamics as the `delay` shell's flags would give them.
fn delay_options(keys: &DirectionSection, base: &Path, once: bool) -> link::options::DelayOptions {
    link::options::DelayOptions {
        jitter: text(&keys.jitter),
        correlation: text(&keys.correlation),
        distribution: text(&keys.distribution),
        reorder: keys.reorder.unwrap_or(false),
        square: text(&keys.square),
        steps: text(&keys.steps),
        walk: text(&keys.walk),
        delay_trace: path_in(base, &keys.delay_trace),
        interpolate: keys.interpolate.unwrap_or(false),
        once,
    }
}

/// The server's dynamics as the `link` shell's flags would give them.
fn link_options(keys: &DirectionSection, base: &Path) -> link::options::LinkOptions {
    link::options::LinkOptions {
        rate_steps: text(&keys.rate_steps),
        rate_trace: path_in(base, &keys.rate_trace),
        outage: text(&keys.outage),
        onoff: text(&keys.onoff),
        onoff_exp: text(&keys.onoff_exp),
        aggregate: text(&keys.aggregate),
    }
}

/// The loss model and mangling as the `loss` shell's flags would give them.
fn loss_options(keys: &DirectionSection) -> link::options::LossOptions {
    let words = |v: &Option<Spanned<String>>| {
        v.as_ref()
            .map(|v| v.get_ref().split_whitespace().map(str::to_string).collect())
    };
    link::options::LossOptions {
        gemodel: words(&keys.gemodel),
        state: words(&keys.state),
        burst: text(&keys.burst),
        duplicate: text(&keys.duplicate),
        corrupt: text(&keys.corrupt),
    }
}

/// The value of a text key of a direction by name, for its line.
fn spanned_key<'a>(keys: &'a DirectionSection, name: &str) -> Option<&'a Spanned<String>> {
    match name {
        "jitter" => keys.jitter.as_ref(),
        "correlation" => keys.correlation.as_ref(),
        "distribution" => keys.distribution.as_ref(),
        "square" => keys.square.as_ref(),
        "steps" => keys.steps.as_ref(),
        "walk" => keys.walk.as_ref(),
        "delay_trace" => keys.delay_trace.as_ref(),
        "rate_steps" => keys.rate_steps.as_ref(),
        "rate_trace" => keys.rate_trace.as_ref(),
        "outage" => keys.outage.as_ref(),
        "onoff" => keys.onoff.as_ref(),
        "onoff_exp" => keys.onoff_exp.as_ref(),
        "aggregate" => keys.aggregate.as_ref(),
        "gemodel" => keys.gemodel.as_ref(),
        "state" => keys.state.as_ref(),
        "burst" => keys.burst.as_ref(),
        "duplicate" => keys.duplicate.as_ref(),
        "corrupt" => keys.corrupt.as_ref(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn available() -> CongestionControls {
        CongestionControls {
            available: ["reno", "cubic", "bbr"].map(String::from).to_vec(),
            allowed: ["reno", "bbr"].map(String::from).to_vec(),
        }
    }

    fn plan_of(text: &str) -> Result<Plan, ExperimentError> {
        plan_given(text, &available())
    }

    fn plan_given(text: &str, controls: &CongestionControls) -> Result<Plan, ExperimentError> {
        let source = Source {
            file: "x.toml",
            text,
        };
        let experiment = parse(&source)?;
        plan(
            &experiment,
            &source,
            "x",
            Path::new("."),
            controls,
            &crate::system::run_first,
        )
    }

    const TWO_HOSTS: &str = r#"
[hosts.a]
side = "left"
delay = "10ms"
up = { delay = "5ms" }

[hosts.b]
side = "right"
tcp_ecn = 1

[bottleneck]
rate = "50mbit"
queue = "droptail packets 100"
reverse = { rate = "10mbit" }
"#;

    #[test]
    fn defaults_and_overrides_resolve_per_direction() {
        let plan = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncount = 2\n"
        ))
        .unwrap();
        assert_eq!(plan.name, "x");
        assert_eq!(plan.run.duration.0, 10 * NS_PER_SEC);
        assert_eq!(plan.hosts[0].up.delay, 5_000_000);
        assert_eq!(plan.hosts[0].down.delay, 10_000_000);
        assert_eq!(plan.hosts[1].address, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(
            plan.hosts[1].sysctls,
            vec![("net.ipv4.tcp_ecn".into(), "1".into())]
        );
        let [forward, reverse] = &plan.bottlenecks[0];
        assert!(matches!(forward.server, Server::Rate(r) if r.bits_per_sec() == 50_000_000));
        assert!(matches!(reverse.server, Server::Rate(r) if r.bits_per_sec() == 10_000_000));
        assert_eq!(
            reverse.queue,
            aqm::QueueSpec::parse("droptail packets 100").unwrap()
        );
        assert_eq!(plan.flows.len(), 2);
        assert_eq!(plan.flows[0].name, "0-tcp-a-b.0");
        assert_eq!(
            (plan.flows[0].port, plan.flows[1].port),
            (FIRST_PORT, FIRST_PORT + 1)
        );
        assert_eq!(plan.flows[1].duration, 10 * NS_PER_SEC);
    }

    /// The fabric's slack is the shells' by default, and `[run]` sets it.
    #[test]
    fn the_runs_slack_defaults_to_the_shells_and_can_be_set() {
        let flows = "\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n";
        let plan = plan_of(&format!("{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, shells::DEFAULT_SLACK);
        let plan = plan_of(&format!("[run]\nslack = \"0us\"\n{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, 0);
        let plan = plan_of(&format!("[run]\nslack = \"5us\"\n{TWO_HOSTS}{flows}")).unwrap();
        assert_eq!(plan.run.slack.0, 5_000);
    }

    /// A namespace other than the first may only default to an allowed
    /// congestion control; the host's flows get any other by name.
    #[test]
    fn a_hosts_congestion_control_reaches_its_flows() {
        let text = TWO_HOSTS.replace("side = \"left\"", "side = \"left\"\ncc = \"cubic\"");
        let plan = plan_of(&format!("{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n")).unwrap();
        assert!(
            plan.hosts[0].sysctls.is_empty(),
            "cubic is not allowed as a default"
        );
        assert_eq!(plan.flows[0].cc.as_deref(), Some("cubic"));
        let text = TWO_HOSTS.replace("side = \"left\"", "side = \"left\"\ncc = \"reno\"");
        let plan = plan_of(&format!(
            "{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"bbr\"\n"
        ))
        .unwrap();
        assert_eq!(
            plan.hosts[0].sysctls,
            vec![("net.ipv4.tcp_congestion_control".into(), "reno".into())]
        );
        assert_eq!(plan.flows[0].cc.as_deref(), Some("bbr"));
    }

    /// Settings after one of emu's congestion controls reach the flow (and
    /// a host's reach the flows that name none), the name alone goes to
    /// sockets and sysctls; a bad setting, or settings of a kernel's
    /// congestion control, are refused where they are written.
    #[test]
    fn a_congestion_controls_settings_reach_its_flow() {
        let controls = crate::congestion::with_emus(available());
        let plan_with = |text: &str| plan_given(text, &controls);
        let flow = |cc: &str| format!("[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"{cc}\"\n");
        let plan = plan_with(&format!(
            "{TWO_HOSTS}\n{}",
            flow("prague  ecn_fallback=1 rtt_target=10ms")
        ))
        .unwrap();
        assert_eq!(plan.flows[0].cc.as_deref(), Some("prague"));
        let settings = plan.flows[0].cc_settings.as_ref().unwrap();
        assert_eq!(settings.get("ecn_fallback"), Some(1));
        assert_eq!(settings.get("rtt_target"), Some(10_000));

        let text = TWO_HOSTS.replace(
            "side = \"left\"",
            "side = \"left\"\ncc = \"dctcp shift_g=2\"",
        );
        let plan = plan_with(&format!("{text}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n")).unwrap();
        assert_eq!(plan.flows[0].cc.as_deref(), Some("dctcp"));
        assert_eq!(
            plan.flows[0].cc_settings.as_ref().unwrap().get("shift_g"),
            Some(2)
        );
        assert_eq!(
            plan.hosts[0].cc_settings.as_ref().unwrap().get("shift_g"),
            Some(2)
        );
        assert_eq!(
            plan.hosts[0].sysctls,
            vec![("net.ipv4.tcp_congestion_control".into(), "dctcp".into())]
        );

        let error = plan_with(&format!("{TWO_HOSTS}\n{}", flow("prague ecn_fallback=4")))
            .unwrap_err()
            .0;
        assert!(
            error.contains("flows.0.cc") && error.contains("ecn_fallback=4"),
            "{error}"
        );
        let error = plan_with(&format!("{TWO_HOSTS}\n{}", flow("cubic beta=700")))
            .unwrap_err()
            .0;
        assert!(error.contains("cubic is the kernel's"), "{error}");
        assert!(error.contains("dctcp, prague"), "{error}");
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let error = plan_of(&TWO_HOSTS.replace("tcp_ecn = 1", "tcp_ecm = 1"))
            .unwrap_err()
            .0;
        assert!(error.contains("line 9"), "{error}");
        assert!(error.contains("tcp_ecm"), "{error}");
    }

    #[test]
    fn a_missing_congestion_control_lists_the_available_ones() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"westwood\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(error.contains("line 19"), "{error}");
        assert!(error.contains("flows.0.cc"), "{error}");
        assert!(error.contains("available: reno, cubic, bbr"), "{error}");
        // An empty name is said to be empty, with no module to load.
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("is empty") && !error.contains("modprobe"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_host_and_a_bad_queue_are_reported_where_they_are() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"c\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("line 18") && error.contains("no host named 'c'"),
            "{error}"
        );
        let error = plan_of(&format!(
            "{}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n",
            TWO_HOSTS.replace("droptail packets 100", "droptail pakets 100")
        ))
        .unwrap_err()
        .0;
        assert!(error.contains("bottleneck.forward.queue"), "{error}");
        assert!(error.contains("line 13"), "{error}");
    }

    /// A flow between two hosts of one side runs, but never crosses the
    /// bottleneck: the plan says so.
    #[test]
    fn a_flow_that_never_crosses_the_bottleneck_is_warned_of() {
        let across = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n"
        ))
        .unwrap();
        assert!(across.warnings.is_empty(), "{:?}", across.warnings);
        let text = format!(
            "{TWO_HOSTS}\n[hosts.c]\nside = \"left\"\n[[flows]]\nname = \"side\"\nfrom = \"a\"\nto = \"c\"\n"
        );
        let beside = plan_of(&text).unwrap();
        assert_eq!(beside.warnings.len(), 1);
        let warning = &beside.warnings[0];
        assert!(
            warning.contains("flow side") && warning.contains("both on the left"),
            "{warning}"
        );
    }

    /// A flow too short is blamed on the key that made it so: its own
    /// duration, or else the run's (a bare `duration = 2` is 2 ms).
    #[test]
    fn a_flow_too_short_names_the_duration_at_fault() {
        let flows = "\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n";
        let err = plan_of(&format!("[run]\nduration = 2\n{TWO_HOSTS}{flows}")).unwrap_err();
        assert!(
            err.0.contains("key run.duration") && err.0.contains("2 ms"),
            "{err}"
        );
        let own = format!("{TWO_HOSTS}{flows}duration = \"500ms\"\n");
        let err = plan_of(&own).unwrap_err();
        assert!(err.0.contains("key flows.0.duration"), "{err}");
    }

    #[test]
    fn keys_of_another_kind_of_flow_are_refused() {
        let error = plan_of(&format!(
            "{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\nrate = \"1mbit\"\n"
        ))
        .unwrap_err()
        .0;
        assert!(
            error.contains("flows.0.rate") && error.contains("tcp flow"),
            "{error}"
        );
    }

    #[test]
    fn bottlenecks_in_series_are_an_array_of_tables() {
        let text = TWO_HOSTS.replace(
            "[bottleneck]\nrate = \"50mbit\"\nqueue = \"droptail packets 100\"\nreverse = { rate = \"10mbit\" }",
            "[[bottleneck]]\nrate = \"50mbit\"\n[[bottleneck]]\ndelay = \"3ms\"",
        );
        let plan = plan_of(&format!(
            "{text}\n[[flows]]\nkind = \"ping\"\nfrom = \"b\"\nto = \"a\"\n"
        ))
        .unwrap();
        assert_eq!(plan.bottlenecks.len(), 2);
        assert_eq!(plan.bottlenecks[1][1].delay, 3_000_000);
        assert_eq!(plan.flows[0].kind, FlowKind::Ping);
    }
}
