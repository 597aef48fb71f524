//! The environment the command runs in: where the host is (EMU_BASE and
//! Mahimahi's MAHIMAHI_BASE), the prompt prefix naming the shells, and
//! what nested emu processes need to know to pick addresses of their own.

use crate::sys::addressing::AddressPair;

/// The command's environment: the address of the host as seen from inside
/// (kept from an enclosing emu, so it is always the outermost), the prompt
/// prefix, and what nested emu processes need to avoid our addresses.
pub(crate) fn command_environment(
    outermost: AddressPair,
    prompt: &str,
    taken: &[u32],
    depth: usize,
) -> Vec<(String, String)> {
    let base = std::env::var("EMU_BASE").unwrap_or_else(|_| outermost.outer4.to_string());
    let base6 = std::env::var("EMU_BASE6").unwrap_or_else(|_| outermost.outer6.to_string());
    let mahimahi_base = std::env::var("MAHIMAHI_BASE").unwrap_or_else(|_| base.clone());
    let prefix = std::env::var("EMU_SHELL_PREFIX").unwrap_or_default() + prompt;
    let mm_prefix = std::env::var("MAHIMAHI_SHELL_PREFIX").unwrap_or_default() + prompt;
    let pairs: Vec<String> = taken.iter().map(|p| p.to_string()).collect();
    vec![
        ("EMU_BASE".into(), base),
        ("EMU_BASE6".into(), base6),
        ("MAHIMAHI_BASE".into(), mahimahi_base),
        ("EMU_SHELL_PREFIX".into(), prefix.clone()),
        ("MAHIMAHI_SHELL_PREFIX".into(), mm_prefix),
        ("EMU_PAIRS_IN_USE".into(), pairs.join(",")),
        ("EMU_SHELL_DEPTH".into(), depth.to_string()),
        // Shows the prefix in bash's prompt once, after its rc files set PS1.
        (
            "PROMPT_COMMAND".into(),
            "PS1=\"$EMU_SHELL_PREFIX$PS1\"; unset PROMPT_COMMAND".into(),
        ),
        ("PS1".into(), format!("{prefix}$ ")),
    ]
}
