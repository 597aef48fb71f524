//! The congestion controls emu ships, as BPF programs, and the helpers they
//! need on the hosts.
//!
//! An L4S study needs senders that answer each CE mark in proportion and
//! send ECT(1) (TCP Prague, DCTCP); an SCE study needs senders that slow
//! down gently on SCE feedback (Reno-SCE, Cubic-SCE, DCTCP-SCE). A stock kernel has
//! none of them, but one with BTF accepts congestion controls written as
//! BPF `struct_ops`. This crate holds them (`bpf/`, compiled by clang at
//! build time) and loads them for the duration of a run.
//!
//! Layers, from the bottom:
//! - [`catalogue`]: what emu ships, by the names users write;
//!   [`parameters`]: the references' module parameters each takes, per
//!   flow, and how a flow writes them; [`versions`]: the versions of a
//!   reference one of them can follow, each with its commit.
//! - [`kernel`]: what this kernel offers (its congestion controls, BTF).
//! - [`object`]: the compiled BPF object and the errors libbpf reports.
//! - [`registry`]: registering a congestion control, or sharing the one
//!   another emu registered; what is registered now.
//! - [`per_flow`]: a flow's settings handed to its connections (the map
//!   `emu_cc_params`), for the length of a run.
//! - [`hosts`]: the helpers attached to a host's device (ECT(1) on an L4S
//!   sender's data, SCE feedback), which do what a congestion control
//!   cannot on a kernel before 7.0.
//! - [`sessions`]: the set loaded for a session of runs, an experiment's
//!   or a chain of shells' command (`--cc`), with the command's helpers
//!   and settings handed to its devices.
//!
//! Nothing here is left behind when emu ends, however it ends: a
//! congestion control is registered through a BPF link whose descriptor
//! only emu holds, so the kernel unregisters it when emu's last descriptor
//! closes (also after `kill -9`); the helpers are attached to devices of
//! emu's own namespaces and TUN devices, which go with them. None of this
//! touches emu's per-packet path.

pub mod catalogue;
pub mod error;
pub mod feedback;
pub mod hosts;
pub mod kernel;
pub mod linux_ccs;
pub mod object;
pub mod parameter_tables;
pub mod parameters;
pub mod per_flow;
pub mod registry;
pub mod sessions;
pub mod versions;

mod algorithms;

pub use catalogue::{find, Endpoint, Marking, ENDPOINTS};
pub use error::EndpointError;
pub use hosts::HostHelpers;
pub use parameters::Settings;
pub use registry::{Loaded, Origin};
