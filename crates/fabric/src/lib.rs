//! The packet fabric of an experiment, as a pure model.
//!
//! Hosts sit on two sides of one or more bottlenecks in series (a dumbbell,
//! or a parking lot). Each host has a side link to its side's router; every
//! link direction is one exact `link::Link`. A packet a host sends enters
//! its side link, crosses the bottlenecks towards the destination's side and
//! leaves through the destination's side link. [`Topology`] says which link
//! a packet takes next (routing by destination address); [`Fabric`] moves
//! packets from link to link in global time order, so a hop is exact in
//! time however late the caller runs it. Nothing here reads a clock or
//! touches a device: the same code runs live (shells' dumbbell thread) and
//! in virtual time (tests). Split into two lanes ([`lanes`]), one per
//! direction across the bottlenecks, it runs on two threads.

mod fabric;
pub mod lanes;
#[cfg(any(test, feature = "fixtures"))]
pub mod testing;
mod topology;

pub use fabric::{Delivery, Fabric, FabricError};
pub use topology::{Hop, HostId, LinkId, Next, Side, Topology, TopologyError};
