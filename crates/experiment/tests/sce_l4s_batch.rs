//! experiments/sce-l4s/ against the bakeoff's batch file, cell by cell.
//!
//! The batch's cells are written out below by hand, from reading the
//! batch: its scenarios' lists of rates, RTTs (each with its length and its
//! moments of change), qdisc lines and flows, expanded as the batch's
//! `for_` lists are. Every study file is read and planned by the planner a
//! run uses; each planned cell is turned into what the batch specifies
//! (per direction, what a packet crosses in order: a netem, then the AQM
//! with its rate and queue over time, and its one-way delay; the run's
//! length; each flow's congestion control with its settings, start and
//! TOS) and the two sets must be equal: a cell missing from either side,
//! or differing in any of these, fails with both listed.
//!
//! Where emu writes a batch line its own way, the table gives emu's
//! equivalent and says the batch's line beside it.

use emu_core::time::NS_PER_SEC;
use emu_core::Nanos;
use experiment::file::sweep::Grid;
use experiment::file::{self, CongestionControls, DirectionPlan, Source};
use link::{DelayDynamics, Schedule, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const MBIT: u64 = 1_000_000;

/// What a packet crosses on one direction of the path, in order.
#[derive(Debug, Clone, PartialEq)]
enum Hop {
    /// A netem before the AQM: its delay and what it adds (jitter,
    /// reordering, slots).
    Netem { delay: Nanos, adds: DelayDynamics },
    /// The AQM and its shaper: the one-way delay of the path's netem (half
    /// the base RTT), the rate over time (bit/s from each instant), the
    /// queue over time, whether bytes count the Ethernet header.
    Aqm {
        one_way: Nanos,
        rates: Vec<(Nanos, u64)>,
        queues: Vec<(Nanos, aqm::QueueSpec)>,
        ethernet: bool,
        adds: DelayDynamics,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Flow {
    cc: String,
    settings: Option<endpoints::Settings>,
    start: Nanos,
    tos: u8,
}

/// One cell as the batch specifies it.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    scenario: String,
    variant: String,
    length: Nanos,
    forward: Vec<Hop>,
    reverse: Vec<Hop>,
    flows: Vec<Flow>,
}

// ---- The planned side ----------------------------------------------------

fn study() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sce-l4s")
}

fn controls() -> CongestionControls {
    let kernel = ["reno", "cubic"].map(String::from).to_vec();
    experiment::run::congestion::with_emus(CongestionControls {
        available: kernel.clone(),
        allowed: kernel,
    })
}

/// The rate a direction serves at over time: its link's, else its
/// queue's own shaper.
fn rates(d: &DirectionPlan) -> Vec<(Nanos, u64)> {
    match &d.server {
        Server::Rate(r) => vec![(0, r.bits_per_sec())],
        Server::Schedule(Schedule::Steps {
            points,
            repeat: false,
            interpolate: false,
        }) => points.to_vec(),
        Server::Unlimited => d.queue.shaper_bps().map(|s| (0, s)).into_iter().collect(),
        other => panic!("a server the batch never had: {other:?}"),
    }
}

fn hop(d: &DirectionPlan) -> Option<Hop> {
    let queued = d.queue != aqm::QueueSpec::Infinite || !d.dynamics.queue_steps.is_empty();
    if !queued && matches!(d.server, Server::Unlimited) {
        return (d.delay > 0 || !d.dynamics.delay.is_none()).then(|| Hop::Netem {
            delay: d.delay,
            adds: d.dynamics.delay.clone(),
        });
    }
    // The batch shaped with htb or with the queue itself, never by a
    // serializing link: a link rate here is htb's.
    assert!(
        matches!(d.server, Server::Unlimited) || d.dynamics.shaper.is_some(),
        "a link rate without `shaper = \"htb\"`: {:?}",
        d.server
    );
    let rates = rates(d);
    let mut queues = vec![(0, d.queue.clone())];
    queues.extend(
        d.dynamics
            .queue_steps
            .iter()
            .map(|s| (s.at, s.queue.clone())),
    );
    // A queue's own shaper under a link rate must run at that rate, or
    // the cell is not the batch's (the link would be the bottleneck).
    for (_, q) in &queues {
        if let Some(shaper) = q.shaper_bps() {
            assert_eq!(
                rates,
                vec![(0, shaper)],
                "a queue's shaper ({q:?}) and its link's rate differ"
            );
        }
    }
    Some(Hop::Aqm {
        one_way: d.delay,
        rates,
        queues,
        ethernet: d.link_layer == emu_core::size::LinkLayer::Ethernet,
        adds: d.dynamics.delay.clone(),
    })
}

fn planned_cell(plan: &file::Plan) -> Cell {
    let forward = plan
        .bottlenecks
        .iter()
        .filter_map(|[f, _]| hop(f))
        .collect();
    let reverse = plan
        .bottlenecks
        .iter()
        .rev()
        .filter_map(|[_, r]| hop(r))
        .collect();
    // Side links would add what the batch never had.
    for h in &plan.hosts {
        assert!(hop(&h.up).is_none() && hop(&h.down).is_none(), "{}", h.name);
    }
    Cell {
        scenario: plan.run.scenario.clone().expect("a scenario"),
        variant: plan.run.variant.clone().expect("a variant"),
        length: plan.run.duration.0,
        forward,
        reverse,
        flows: plan
            .flows
            .iter()
            .map(|f| Flow {
                cc: f.cc.clone().expect("a congestion control"),
                settings: f.cc_settings.clone(),
                start: f.start,
                tos: f.tos,
            })
            .collect(),
    }
}

fn planned_cells() -> Vec<Cell> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(study())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut cells = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let grid = Grid::new(&name, &text, &[]).unwrap();
        for index in 0..grid.len() {
            let cell = grid.cell(index);
            let source = Source {
                file: &name,
                text: &cell.text,
            };
            let experiment = file::parse(&source).unwrap_or_else(|e| panic!("{e}"));
            let plan = file::plan(
                &experiment,
                &source,
                "cell",
                &study(),
                &controls(),
                &experiment::run::wrappers::run_first,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            cells.push(planned_cell(&plan));
        }
    }
    cells
}

// ---- The batch's side, by hand --------------------------------------------

/// The batch's RTT arguments: the RTT, the run's length and, where the
/// scenario changes something, its two moments (delay1, delay2).
struct Rtt {
    ms: u64,
    length_s: u64,
    changes_s: (u64, u64),
}

const fn rtt(ms: u64, length_s: u64, changes_s: (u64, u64)) -> Rtt {
    Rtt {
        ms,
        length_s,
        changes_s,
    }
}

fn queue(line: &str) -> aqm::QueueSpec {
    aqm::QueueSpec::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn secs(s: u64) -> Nanos {
    s * NS_PER_SEC
}

/// The AQM as the batch set it up: `rates` in Mbit/s from each second,
/// `queues` from each second; on a veth, so bytes count the Ethernet
/// header.
fn aqm(rtt: &Rtt, rates: &[(u64, u64)], queues: &[(u64, &str)]) -> Hop {
    Hop::Aqm {
        one_way: rtt.ms * MS / 2,
        rates: rates.iter().map(|&(t, r)| (secs(t), r * MBIT)).collect(),
        queues: queues.iter().map(|&(t, q)| (secs(t), queue(q))).collect(),
        ethernet: true,
        adds: DelayDynamics::default(),
    }
}

/// The batch's `netem delay D J C` (uniform: netem's jitter without a
/// table; it reorders) or `netem delay D slot ...`, as emu's options.
fn netem(delay: &str, jitter: Option<(&str, &str)>, slot: Option<&str>) -> Hop {
    let options = link::options::DelayOptions {
        jitter: jitter.map(|j| j.0.to_string()),
        correlation: jitter.map(|j| j.1.to_string()),
        distribution: jitter.map(|_| "uniform".to_string()),
        reorder: jitter.is_some(),
        ..Default::default()
    };
    let delay = emu_core::time::parse_duration(delay).unwrap();
    let (mut adds, _) = options.parse(Some(delay)).unwrap();
    adds.slot = slot.map(|s| link::SlotSpec::parse(s).unwrap());
    Hop::Netem { delay, adds }
}

fn prague_2020() -> Option<endpoints::Settings> {
    // The L4S team's kernel of 2020-04-08: its module, Prague 0.5, with
    // that module's defaults.
    let prague = endpoints::find("prague").unwrap();
    Some(endpoints::parameters::parse(prague, "version=0.5").unwrap())
}

fn flow(cc: &str, start_s: u64, tos: u8) -> Flow {
    Flow {
        cc: cc.into(),
        settings: if cc == "prague" { prague_2020() } else { None },
        start: secs(start_s),
        tos,
    }
}

fn cell(scenario: &str, variant: &str, rtt: &Rtt, path: Vec<Hop>, flows: Vec<Flow>) -> Cell {
    // The batch's hooks are `qdisc bidir ...`: both directions alike, the
    // netem on each one's ingress, before the AQM.
    Cell {
        scenario: scenario.into(),
        variant: variant.into(),
        length: secs(rtt.length_s),
        forward: path.clone(),
        reverse: path,
        flows,
    }
}

/// The batch's tc lines for S2 (its `for_qdisc` lists: L4S's and SCE's
/// share all but their own queues), and the length each forces: only
/// red(150000) has its own, 180 s.
const S2_SHARED: [(&str, Option<u64>); 12] = [
    ("pfifo limit 1000", None),
    ("pfifo limit 50", None),
    ("fq_codel flows 1 ecn", None),
    ("fq_codel flows 1 target 3ms interval 40ms ecn", None),
    ("fq_codel flows 1 target 1ms interval 20ms ecn", None),
    (
        "red limit 150000 avpkt 1000 adaptive bandwidth 50Mbit ecn",
        Some(180),
    ),
    (
        "red limit 400000 avpkt 1000 adaptive bandwidth 50Mbit ecn",
        None,
    ),
    ("pie ecn", None),
    ("pie noecn", None),
    (
        "pie limit 100 target 5ms tupdate 32ms alpha 2 beta 20 ecn",
        None,
    ),
    (
        "pie limit 100 target 20ms tupdate 32ms alpha 2 beta 20 ecn",
        None,
    ),
    (
        "pie limit 1000 target 20ms tupdate 32ms alpha 2 beta 20 ecn",
        None,
    ),
];

// Long: the batch's six scenarios, each as the batch writes it, one
// after another; splitting them would only scatter the table.
fn batch_cells() -> Vec<Cell> {
    let mut cells = Vec::new();

    // S1: tcp_1up; 5, 50, 250 Mbit/s; 20 ms (30 s), 80 ms (60 s), 160 ms
    // (150 s). SCE: twin_codel_af shaping itself, cubic-sce marked 0x10 at
    // 20 ms; L4S: dualpi2 under htb, prague.
    let s1_rtts = [
        rtt(20, 30, (0, 0)),
        rtt(80, 60, (0, 0)),
        rtt(160, 150, (0, 0)),
    ];
    for r in &s1_rtts {
        for bw in [5, 50, 250] {
            let twin = format!("twin_codel_af bandwidth {bw}Mbit sce-thresh 4");
            let tos = if r.ms == 20 { 0x10 } else { 0 };
            cells.push(cell(
                "1-one-flow",
                "sce",
                r,
                vec![aqm(r, &[(0, bw)], &[(0, &twin)])],
                vec![flow("cubic-sce", 0, tos)],
            ));
            cells.push(cell(
                "1-one-flow",
                "l4s",
                r,
                vec![aqm(r, &[(0, bw)], &[(0, "dualpi2")])],
                vec![flow("prague", 0, 0)],
            ));
        }
    }

    // S2: tcp_2up at 50 Mbit/s, stream_delays 0,10; 20 ms (40 s), 80 ms
    // (60 s), 160 ms (180 s). SCE: cubic vs cubic-sce, markings 0,0x10 at
    // 20 ms and 0,0 above; L4S: cubic vs prague.
    let s2_rtts = [
        rtt(20, 40, (0, 0)),
        rtt(80, 60, (0, 0)),
        rtt(160, 180, (0, 0)),
    ];
    let sce_own = [
        ("twin_codel_af bandwidth 50Mbit sce-thresh 4", None),
        ("lfq_cobalt bandwidth 50Mbit sce-thresh 8", None),
    ];
    let l4s_own = [("dualpi2", None)];
    for (variant, own, second) in [
        ("sce", &sce_own[..], "cubic-sce"),
        ("l4s", &l4s_own[..], "prague"),
    ] {
        for (line, length) in own.iter().chain(&S2_SHARED) {
            for r in &s2_rtts {
                let r = &rtt(r.ms, length.unwrap_or(r.length_s), r.changes_s);
                let tos = if variant == "sce" && r.ms == 20 {
                    0x10
                } else {
                    0
                };
                cells.push(cell(
                    "2-two-flow",
                    variant,
                    r,
                    vec![aqm(r, &[(0, 50)], &[(0, line)])],
                    vec![flow("cubic", 0, 0), flow(second, 10, tos)],
                ));
            }
        }
    }

    // S3: tcp_1up at 50 Mbit/s; 20 ms (60 s, changes at 20 and 40 s), 80
    // ms (180 s, at 60 and 120 s). SCE: cake bandwidth 50Mbit sce, then
    // htb 50Mbit with pie noecn (the root replaced), then cake again;
    // L4S: htb 50Mbit with dualpi2, its child replaced by pie noecn, then
    // dualpi2 again.
    for r in &[rtt(20, 60, (20, 40)), rtt(80, 180, (60, 120))] {
        let (a, b) = r.changes_s;
        let cake = "cake bandwidth 50Mbit sce";
        cells.push(cell(
            "3-bottleneck-shift",
            "sce",
            r,
            vec![aqm(
                r,
                &[(0, 50)],
                &[(0, cake), (a, "pie noecn"), (b, cake)],
            )],
            vec![flow("cubic-sce", 0, 0)],
        ));
        cells.push(cell(
            "3-bottleneck-shift",
            "l4s",
            r,
            vec![aqm(
                r,
                &[(0, 50)],
                &[(0, "dualpi2"), (a, "pie noecn"), (b, "dualpi2")],
            )],
            vec![flow("prague", 0, 0)],
        ));
    }

    // S4: tcp_1up; 50 Mbit/s, then 40 or 5, then 50 again; 20 ms (60 s,
    // at 20 and 40 s), 80 ms (120 s, at 40 and 80 s). SCE: reno-sce;
    // twin_codel_af's own bandwidth changed in place (`tc qdisc change`
    // of `twin_codel_af bandwidth R sce-thresh 4`), which emu writes as
    // the link's rate under `twin_codel_af sce-thresh 4`. L4S: prague;
    // the htb class's rate changed, dualpi2 kept.
    for r in &[rtt(20, 60, (20, 40)), rtt(80, 120, (40, 80))] {
        for low in [40, 5] {
            let (a, b) = r.changes_s;
            let steps = [(0, 50), (a, low), (b, 50)];
            cells.push(cell(
                "4-capacity-reduction",
                "sce",
                r,
                vec![aqm(r, &steps, &[(0, "twin_codel_af sce-thresh 4")])],
                vec![flow("reno-sce", 0, 0)],
            ));
            cells.push(cell(
                "4-capacity-reduction",
                "l4s",
                r,
                vec![aqm(r, &steps, &[(0, "dualpi2")])],
                vec![flow("prague", 0, 0)],
            ));
        }
    }

    // S5: tcp_1up at 50 Mbit/s, 60 s; 20 and 80 ms. On each direction's
    // ingress a netem tree: `netem delay D` whose child is `netem delay
    // 200us slot 800us 10ms packets 42 limit 512`. SCE: twin_codel_af or
    // cake shaping themselves; L4S: dualpi2 under htb.
    let wifi = || netem("200us", None, Some("800us 10ms packets 42"));
    for r in &[rtt(20, 60, (0, 0)), rtt(80, 60, (0, 0))] {
        for line in [
            "twin_codel_af bandwidth 50Mbit sce-thresh 4",
            "cake bandwidth 50Mbit sce",
        ] {
            cells.push(cell(
                "5-wifi-burstiness",
                "sce",
                r,
                vec![wifi(), aqm(r, &[(0, 50)], &[(0, line)])],
                vec![flow("cubic-sce", 0, 0)],
            ));
        }
        cells.push(cell(
            "5-wifi-burstiness",
            "l4s",
            r,
            vec![wifi(), aqm(r, &[(0, 50)], &[(0, "dualpi2")])],
            vec![flow("prague", 0, 0)],
        ));
    }

    // S6: tcp_1up at 50 Mbit/s, 80 ms, 60 s; the netem tree's child is
    // `netem delay 2ms 1ms 10%`, `4ms 2ms 10%` or `10ms 5ms 10%`. SCE:
    // twin_codel_af shaping itself; L4S: dualpi2 under htb.
    let r = &rtt(80, 60, (0, 0));
    for (delay, jitter) in [("2ms", "1ms"), ("4ms", "2ms"), ("10ms", "5ms")] {
        let jittery = || netem(delay, Some((jitter, "10%")), None);
        let twin = "twin_codel_af bandwidth 50Mbit sce-thresh 4";
        cells.push(cell(
            "6-jitter",
            "sce",
            r,
            vec![jittery(), aqm(r, &[(0, 50)], &[(0, twin)])],
            vec![flow("cubic-sce", 0, 0)],
        ));
        cells.push(cell(
            "6-jitter",
            "l4s",
            r,
            vec![jittery(), aqm(r, &[(0, 50)], &[(0, "dualpi2")])],
            vec![flow("prague", 0, 0)],
        ));
    }
    cells
}

/// Cells counted by their Debug text: a multiset, so a duplicate counts.
fn counted(cells: &[Cell]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for c in cells {
        *counts.entry(format!("{c:?}")).or_insert(0) += 1;
    }
    counts
}

/// The cells `a` has more or fewer times than `b`, one a line.
fn not_alike(a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>) -> String {
    a.iter()
        .filter(|(c, n)| b.get(*c) != Some(n))
        .map(|(c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_study_is_the_batch_cell_by_cell() {
    let planned = counted(&planned_cells());
    let batch_cells = batch_cells();
    assert_eq!(batch_cells.len(), 123, "the table itself");
    let batch = counted(&batch_cells);
    let (missing, extra) = (not_alike(&batch, &planned), not_alike(&planned, &batch));
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the batch's cells the study lacks or has otherwise:\n{missing}\n\n\
         the study's cells the batch does not have:\n{extra}"
    );
}
