//! The host's address in the command's arguments: `$EMU_BASE`,
//! `${EMU_BASE}`, `$EMU_BASE6`, `$MAHIMAHI_BASE` (and their braced forms)
//! reach emu as text when the user quoted them (`iperf3 -c '$EMU_BASE'`),
//! since the user's shell has no such variable; emu puts in the value the
//! command's environment gives them, so a command line works as typed.
//!
//! The rule: every argument is rewritten, a placeholder being `$` and the
//! whole name (so `$EMU_BASE6` is not `$EMU_BASE` followed by `6`, and
//! `$EMU_BASES` is left alone), except when the program is a POSIX shell
//! (`sh -c '...'`): its script expands the variables itself, from the
//! environment, and may assign or quote them as it likes. Cost: one pass
//! over the arguments at start.

/// The variables replaced; their values come from the command's environment.
pub const NAMES: [&str; 3] = ["EMU_BASE", "EMU_BASE6", "MAHIMAHI_BASE"];

/// Programs whose arguments are scripts that expand variables themselves.
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox"];

/// `argv` with the placeholders of [`NAMES`] replaced by their values in
/// `env` (a name missing from `env` is left as written).
pub fn expand(argv: Vec<String>, env: &[(String, String)]) -> Vec<String> {
    let program = argv
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_default();
    if SHELLS.contains(&program.as_str()) {
        return argv;
    }
    let value = |name: &str| {
        NAMES
            .contains(&name)
            .then(|| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()))
            .flatten()
    };
    argv.into_iter()
        .map(|arg| expand_one(&arg, &value))
        .collect()
}

fn expand_one<'a>(arg: &str, value: &impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, taken) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        match value(name) {
            Some(v) if taken > 0 => {
                out.push_str(v);
                rest = &after[taken..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![
            ("EMU_BASE".into(), "10.0.0.1".into()),
            ("EMU_BASE6".into(), "fd00::1".into()),
            ("MAHIMAHI_BASE".into(), "10.0.0.1".into()),
            ("HOME".into(), "/root".into()),
        ]
    }

    fn expanded(words: &[&str]) -> Vec<String> {
        expand(words.iter().map(|w| w.to_string()).collect(), &env())
    }

    #[test]
    fn placeholders_become_the_hosts_address() {
        assert_eq!(
            expanded(&["iperf3", "-c", "$EMU_BASE"]),
            ["iperf3", "-c", "10.0.0.1"]
        );
        assert_eq!(
            expanded(&["ping", "-6", "${EMU_BASE6}", "$MAHIMAHI_BASE:80"]),
            ["ping", "-6", "fd00::1", "10.0.0.1:80"]
        );
        assert_eq!(
            expanded(&["x", "--host=${EMU_BASE}x", "a$EMU_BASE6/64"]),
            ["x", "--host=10.0.0.1x", "afd00::1/64"]
        );
    }

    #[test]
    fn other_text_is_left_as_written() {
        for word in [
            "$HOME",
            "$EMU_BASES",
            "${EMU_BASE",
            "$",
            "$$",
            "${}",
            "cost$",
            "${HOME}",
        ] {
            assert_eq!(expanded(&["x", word]), ["x", word], "{word}");
        }
    }

    #[test]
    fn a_shells_script_expands_its_own_variables() {
        let script = ["sh", "-c", "EMU_BASE=x; echo '$EMU_BASE' $EMU_BASE"];
        assert_eq!(expanded(&script), script);
        assert_eq!(
            expanded(&["/bin/bash", "-c", "$EMU_BASE"]),
            ["/bin/bash", "-c", "$EMU_BASE"]
        );
    }
}
