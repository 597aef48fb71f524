//! How far a session is: the cells done of all (of one file, or of a
//! whole study), and the time left. The estimate is the planned length of
//! the runs still to come (each run's duration plus a set-up allowance),
//! scaled by how long the runs so far took against their own plan; before
//! the first run it is the plan itself. Runs kept from an earlier attempt
//! (`--resume`) count as done and take no time, without bending the
//! scale.

/// A run's set-up and tear-down beyond its duration, planned (namespaces,
/// devices, receivers' head start, the flows' ends): about what a short
/// cell takes on a 2-core machine.
pub const SETUP_SECONDS: f64 = 1.5;

/// The progress of a session's cells.
#[derive(Debug, Clone)]
pub struct Progress {
    cells: usize,
    done: usize,
    /// Planned seconds of the runs not yet run or kept.
    planned_left: f64,
    /// Planned and measured seconds of the runs that ran.
    planned_ran: f64,
    measured_ran: f64,
}

impl Progress {
    /// `cells` to run, whose runs are planned to take `planned` seconds
    /// in all.
    pub fn new(cells: usize, planned: f64) -> Progress {
        Progress {
            cells,
            done: 0,
            planned_left: planned,
            planned_ran: 0.0,
            measured_ran: 0.0,
        }
    }

    /// The planned seconds of one run of `duration_ns`.
    pub fn planned_run(duration_ns: u64) -> f64 {
        duration_ns as f64 / 1e9 + SETUP_SECONDS
    }

    /// A run planned to take `planned` s ended after `measured` s of wall
    /// time, or was kept from an earlier attempt (None).
    pub fn run_done(&mut self, planned: f64, measured: Option<f64>) {
        self.planned_left = (self.planned_left - planned).max(0.0);
        if let Some(measured) = measured {
            self.planned_ran += planned;
            self.measured_ran += measured;
        }
    }

    /// A cell is done (finished, or stopped for good).
    pub fn cell_done(&mut self) {
        self.done = (self.done + 1).min(self.cells);
    }

    pub fn done(&self) -> usize {
        self.done
    }

    pub fn cells(&self) -> usize {
        self.cells
    }

    /// How the runs so far compared with their plan: measured / planned,
    /// 1 before any ran.
    fn scale(&self) -> f64 {
        if self.planned_ran > 0.0 {
            self.measured_ran / self.planned_ran
        } else {
            1.0
        }
    }

    /// Seconds left, besides the run going on now if it is planned to take
    /// `current` s (its own time is counted by whoever watches it).
    pub fn seconds_left_besides(&self, current: f64) -> f64 {
        (self.planned_left - current).max(0.0) * self.scale()
    }

    /// `3 of 123 cells done, about 2 h 58 min left`.
    pub fn line(&self) -> String {
        format!(
            "{} of {} cells done, {}",
            self.done,
            self.cells,
            if self.done == self.cells {
                "none left".to_string()
            } else {
                format!(
                    "about {} left",
                    duration_text(self.seconds_left_besides(0.0))
                )
            }
        )
    }
}

/// A time left, as a person reads it: `2 h 58 min`, `12 min`, `45 s`.
pub fn duration_text(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", (s + 30) / 60),
        _ => {
            let minutes = (s + 30) / 60;
            format!("{} h {:02} min", minutes / 60, minutes % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_people_say_them() {
        assert_eq!(duration_text(0.4), "0 s");
        assert_eq!(duration_text(45.0), "45 s");
        assert_eq!(duration_text(59.6), "1 min");
        assert_eq!(duration_text(12.0 * 60.0 + 29.0), "12 min");
        assert_eq!(
            duration_text(3.0 * 3600.0 + 10.0 * 60.0 + 40.0),
            "3 h 11 min"
        );
        assert_eq!(duration_text(-5.0), "0 s");
    }

    /// Before any run the plan is the estimate; once runs have taken
    /// longer than planned, what is left is scaled alike; a kept run
    /// takes its share off the plan without changing the scale.
    #[test]
    fn the_time_left_follows_the_plan_scaled_by_the_runs_so_far() {
        let run = Progress::planned_run(30_000_000_000);
        assert_eq!(run, 31.5);
        let mut p = Progress::new(4, 4.0 * run);
        assert_eq!(p.line(), "0 of 4 cells done, about 2 min left");
        assert_eq!(p.seconds_left_besides(run), 3.0 * run);
        // The first run took 63 s: twice its plan.
        p.run_done(run, Some(63.0));
        p.cell_done();
        assert_eq!(p.seconds_left_besides(0.0), 3.0 * run * 2.0);
        assert_eq!(p.line(), "1 of 4 cells done, about 3 min left");
        // A run kept from an earlier attempt.
        p.run_done(run, None);
        p.cell_done();
        assert_eq!(p.seconds_left_besides(0.0), 2.0 * run * 2.0);
        p.run_done(run, Some(31.5));
        p.run_done(run, Some(31.5));
        p.cell_done();
        p.cell_done();
        assert_eq!(p.seconds_left_besides(0.0), 0.0);
        assert_eq!(p.line(), "4 of 4 cells done, none left");
        p.cell_done();
        assert_eq!(p.done(), 4, "never past all");
    }
}
