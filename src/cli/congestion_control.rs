//! The congestion control a shell's command gets when it chooses none, and
//! which it may choose, said at start.
//!
//! The kernel keeps the default per network namespace
//! (`net.ipv4.tcp_congestion_control`); a new namespace starts with the
//! first namespace's, so without `--cc` the command gets the host's. emu
//! sets it in the command's namespace to the first name `--cc` gives, or
//! to the default where emu runs (the same, unless emu runs inside another
//! shell). A namespace other than the first may take as its default only
//! a congestion control in `net.ipv4.tcp_allowed_congestion_control`, a
//! list the kernel keeps once for the whole machine (read-only inside a
//! namespace); an unprivileged socket may choose only those too. emu
//! leaves that list alone (it is every user's on the host) and says, when
//! the command runs as an ordinary user, which it cannot choose and the
//! one command that would allow them.

use endpoints::kernel;

/// What the command gets when its sockets choose none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandDefault {
    /// As sockets name it (`reno_sce` for emu's `reno-sce`).
    pub kernel_name: String,
    /// Chosen with `--cc` (else the host's).
    pub chosen: bool,
}

/// The command's default: the first of `--cc`'s names, else the host's.
/// A kernel congestion control outside the allowed list cannot be a
/// namespace's default: that is refused here, before anything is built.
pub fn default_for(cc: &[String]) -> Result<CommandDefault, String> {
    let Some(first) = cc
        .first()
        .map(|c| endpoints::parameters::split(c).0.to_string())
    else {
        return Ok(CommandDefault {
            kernel_name: kernel::default_congestion_control(),
            chosen: false,
        });
    };
    if let Some(endpoint) = endpoints::find(&first) {
        // emu's own are registered as allowed to every namespace.
        return Ok(CommandDefault {
            kernel_name: endpoint.kernel_name.to_string(),
            chosen: true,
        });
    }
    let allowed = kernel::allowed();
    if !allowed.contains(&first) {
        return Err(format!(
            "--cc {first}: a namespace of emu's may take as its default only a congestion control \
             the host allows (net.ipv4.tcp_allowed_congestion_control: {}); allow it first: \
             sudo sysctl -w net.ipv4.tcp_allowed_congestion_control=\"{} {first}\"",
            allowed.join(" "),
            allowed.join(" ")
        ));
    }
    Ok(CommandDefault {
        kernel_name: first,
        chosen: true,
    })
}

/// What emu says at start: the default, and, when the command runs as
/// the ordinary user `user`, those of `available` it cannot choose
/// because they are not in `allowed`.
pub fn describe(
    default: &CommandDefault,
    user: Option<&str>,
    available: &[String],
    allowed: &[String],
) -> Vec<String> {
    let mut lines = vec![if default.chosen {
        format!("congestion control: {} (--cc)", default.kernel_name)
    } else {
        format!(
            "congestion control: {}, the host's default (--cc NAME sets another)",
            default.kernel_name
        )
    }];
    let restricted: Vec<&str> = available
        .iter()
        .filter(|a| !allowed.contains(a))
        .map(String::as_str)
        .collect();
    if let (Some(user), false) = (user, restricted.is_empty()) {
        lines.push(format!(
            "as {user}, the command may choose only {} ({}: the host's \
             net.ipv4.tcp_allowed_congestion_control); to allow the others: \
             sudo sysctl -w net.ipv4.tcp_allowed_congestion_control=\"{} {}\"",
            allowed.join(", "),
            restricted
                .iter()
                .map(|r| format!("{r} needs root"))
                .collect::<Vec<_>>()
                .join(", "),
            allowed.join(" "),
            restricted.join(" ")
        ));
    }
    lines
}

/// What [`describe`] gives for this host and the user the command runs
/// as (said once the shells are up).
pub fn describe_here(default: &CommandDefault) -> Vec<String> {
    let invoker = shells::privilege::invoker();
    let user = invoker.as_ref().map(|i| i.name.as_str());
    describe(default, user, &kernel::available(), &kernel::allowed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_default_is_named_with_where_it_came_from() {
        let host = CommandDefault {
            kernel_name: "bbr".into(),
            chosen: false,
        };
        let lines = describe(&host, None, &names("reno bbr cubic"), &names("reno bbr"));
        assert_eq!(
            lines,
            ["congestion control: bbr, the host's default (--cc NAME sets another)"]
        );
        let chosen = CommandDefault {
            kernel_name: "reno".into(),
            chosen: true,
        };
        let lines = describe(&chosen, None, &names("reno"), &names("reno"));
        assert_eq!(lines, ["congestion control: reno (--cc)"]);
    }

    #[test]
    fn an_ordinary_user_is_told_what_needs_root_and_how_to_allow_it() {
        let host = CommandDefault {
            kernel_name: "bbr".into(),
            chosen: false,
        };
        let lines = describe(
            &host,
            Some("alice"),
            &names("reno bbr cubic"),
            &names("reno bbr"),
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[1]
                .starts_with("as alice, the command may choose only reno, bbr (cubic needs root"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].ends_with("tcp_allowed_congestion_control=\"reno bbr cubic\""),
            "{}",
            lines[1]
        );
        // Nothing to say when every one is allowed.
        let lines = describe(&host, Some("alice"), &names("reno bbr"), &names("reno bbr"));
        assert_eq!(lines.len(), 1);
    }
}
