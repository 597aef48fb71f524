//! Time series built while the records stream past: sums per bin and a
//! step function (queue length) integrated per bin.

use emu_core::Nanos;

/// Sums per time bin, stored sparsely: a flow active for one second of a
/// ten-minute run keeps one second of bins. Bins must be added in
/// nondecreasing order, as a time-ordered stream does.
#[derive(Debug, Clone, Default)]
pub struct Bins {
    entries: Vec<(u32, u64)>,
}

impl Bins {
    pub fn add(&mut self, bin: u32, value: u64) {
        match self.entries.last_mut() {
            Some((last, sum)) if *last == bin => *sum += value,
            _ => {
                debug_assert!(!matches!(self.entries.last(), Some(&(b, _)) if b > bin));
                self.entries.push((bin, value));
            }
        }
    }

    /// First and last bin that received anything.
    pub fn span(&self) -> Option<(u32, u32)> {
        Some((self.entries.first()?.0, self.entries.last()?.0))
    }

    /// Dense values for bins `0..count` (0 where nothing was added).
    pub fn dense(&self, count: usize) -> Vec<u64> {
        let mut out = vec![0; count];
        for &(bin, value) in &self.entries {
            if let Some(slot) = out.get_mut(bin as usize) {
                *slot += value;
            }
        }
        out
    }
}

/// A value that holds between changes (a queue's length), integrated over
/// each bin for its time-weighted mean, with its maximum per bin.
#[derive(Debug, Clone)]
pub struct Step {
    bin: Nanos,
    value: u64,
    since: Nanos,
    area: Vec<f64>,
    max: Vec<u64>,
}

impl Step {
    /// A step function that is 0 from time 0, in bins of `bin` ns.
    pub fn new(bin: Nanos) -> Step {
        Step {
            bin,
            value: 0,
            since: 0,
            area: Vec::new(),
            max: Vec::new(),
        }
    }

    fn grow(&mut self, bin: usize) {
        if self.area.len() <= bin {
            self.area.resize(bin + 1, 0.0);
            self.max.resize(bin + 1, 0);
        }
    }

    /// Integrates the current value up to `until`.
    fn advance(&mut self, until: Nanos) {
        while self.since < until {
            let bin = (self.since / self.bin) as usize;
            let bin_end = (bin as u64 + 1) * self.bin;
            let stop = until.min(bin_end);
            self.grow(bin);
            self.area[bin] += self.value as f64 * (stop - self.since) as f64;
            self.max[bin] = self.max[bin].max(self.value);
            self.since = stop;
        }
    }

    /// The value becomes `value` at `time` (times nondecreasing).
    pub fn set(&mut self, time: Nanos, value: u64) {
        self.advance(time);
        self.value = value;
        let bin = (time / self.bin) as usize;
        self.grow(bin);
        self.max[bin] = self.max[bin].max(value);
    }

    /// Per-bin time-weighted means and maxima for bins `0..count`, the
    /// function held until `end`.
    pub fn finish(mut self, end: Nanos, count: usize) -> (Vec<f64>, Vec<u64>) {
        self.advance(end);
        self.grow(count.max(1) - 1);
        let bin = self.bin as f64;
        let mean = self.area.iter().take(count).map(|a| a / bin).collect();
        self.max.truncate(count);
        (mean, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_sum_sparsely_and_densify() {
        let mut b = Bins::default();
        b.add(2, 5);
        b.add(2, 1);
        b.add(5, 7);
        assert_eq!(b.span(), Some((2, 5)));
        assert_eq!(b.dense(7), vec![0, 0, 6, 0, 0, 7, 0]);
    }

    #[test]
    fn a_step_is_averaged_by_the_time_it_holds() {
        // 10 ns bins: 0 until 5, then 4 until 25, then 2 until the end at 30.
        let mut s = Step::new(10);
        s.set(5, 4);
        s.set(25, 2);
        let (mean, max) = s.finish(30, 3);
        assert_eq!(mean, vec![2.0, 4.0, 3.0]);
        assert_eq!(max, vec![4, 4, 4]);
    }
}
