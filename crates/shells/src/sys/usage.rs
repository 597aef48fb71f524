//! What this process has used of the machine, as the kernel counts it.

/// What emu's own threads (not the command's) used, from getrusage.
pub struct OwnUsage {
    pub user: f64,
    pub system: f64,
    /// Voluntary context switches: each a sleep, and the wake-up that
    /// ended it. On a virtual machine a wake-up costs tens of µs of CPU, so
    /// this count, per packet, says much of what the data path costs.
    pub sleeps: i64,
}

/// The CPU time and voluntary switches of the whole process so far (one
/// `getrusage` call; the command runs in other processes and is not
/// counted).
pub fn own_usage() -> OwnUsage {
    // SAFETY: getrusage fills the struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    OwnUsage {
        user: seconds(usage.ru_utime),
        system: seconds(usage.ru_stime),
        sleeps: usage.ru_nvcsw,
    }
}
