//! The operating system's plumbing: everything a shell or a host needs
//! from the kernel, below the threads that move packets.

pub mod addressing;
pub mod command;
pub mod devices;
pub mod dns;
pub mod dns_relay;
pub mod environment;
pub mod epoll;
pub mod guardian;
pub mod mount_namespace;
pub mod nat;
pub mod netlink;
pub mod netns;
pub mod outside;
pub mod poll;
pub mod privilege;
pub mod resolv_conf;
pub mod rootless;
pub mod schedstat;
pub mod scheduling;
pub mod signals;
pub mod sysctl;
pub mod terminal;
pub mod timer;
pub mod tools;
pub mod tun;
pub mod usage;
