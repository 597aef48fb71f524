//! Independent (Bernoulli) loss with a seeded generator, so a run with the
//! same seed loses exactly the same packets.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Drops each packet independently with probability `probability`.
/// ChaCha8 is used because its output for a given seed and stream is fixed
/// by its specification, across platforms and crate versions.
#[derive(Debug, Clone)]
pub struct Loss {
    probability: f64,
    rng: ChaCha8Rng,
}

impl Loss {
    /// `stream` separates the two directions of one shell (and shells of one
    /// run) so they draw independent sequences from one user-given seed.
    pub fn new(probability: f64, seed: u64, stream: u64) -> Loss {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Loss { probability, rng }
    }

    pub fn probability(&self) -> f64 {
        self.probability
    }

    /// Draws for one packet: true means drop it.
    #[inline]
    pub fn lose(&mut self) -> bool {
        self.probability > 0.0 && self.rng.gen::<f64>() < self.probability
    }
}
