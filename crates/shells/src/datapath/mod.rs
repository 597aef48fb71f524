//! The threads that move packets: a TUN read into the packets of the wire
//! and due packets back out (`wire`), how long to spin before a departure
//! (`spin`), what a direction's threads share and how any of them runs its
//! model (`direction`), reading an input (`input`), the reader threads
//! (`reader`), the rests a thread that never runs out of work takes so
//! the kernel does not throttle it (`rest`), the pump threads, where a packet waits for its departure
//! (`pump`), packets handed between nested shells in memory
//! (`forwarding`), and between the two lanes of an experiment's fabric
//! (`handover`).

pub mod direction;
pub mod forwarding;
pub mod handover;
pub mod input;
pub mod pump;
pub mod reader;
pub mod rest;
pub mod spin;
pub mod wire;
