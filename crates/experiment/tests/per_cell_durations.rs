//! A run's length may differ per cell: `run.duration` is a list like any
//! other, and in `run.together` with the delay it follows the RTT, as the
//! bakeoff's batch ran 30, 60 and 150 s at 20, 80 and 160 ms.

use emu_core::time::NS_PER_SEC;
use experiment::file::sweep::Grid;

mod support;

const FILE: &str = r#"[run]
duration = ["30s", "60s", "150s"]
together = [["bottleneck.delay", "run.duration"]]

[hosts.a]
side = "left"

[hosts.b]
side = "right"

[bottleneck]
rate = "50mbit"
delay = ["10ms", "40ms", "80ms"]

[[flows]]
from = "a"
to = "b"
start = "1s"
"#;

#[test]
fn a_duration_swept_with_the_delay_gives_each_cell_its_own_length() {
    let grid = Grid::new("lengths.toml", FILE, &[]).unwrap();
    assert_eq!(grid.len(), 3, "in step, not multiplied");
    let mut seen = Vec::new();
    for index in 0..grid.len() {
        let plan = support::plan_of("lengths.toml", &grid.cell(index).text).unwrap();
        // The flow runs to the end of its own cell's run.
        seen.push((
            plan.bottlenecks[0][0].delay / 1_000_000,
            plan.run.duration.0 / NS_PER_SEC,
            plan.flows[0].duration / NS_PER_SEC,
        ));
    }
    assert_eq!(seen, [(10, 30, 29), (40, 60, 59), (80, 150, 149)]);
}
