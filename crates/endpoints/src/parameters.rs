//! The references' module parameters, per flow.
//!
//! Each reference congestion control has module parameters that are global
//! to its kernel (`prague_ecn_fallback`, `dctcp_shift_g`, ...). emu offers
//! them as settings of one flow, written after the name where a
//! congestion control is chosen: `cc = "prague ecn_fallback=1
//! rtt_target=10ms"` in an experiment, `--cc "prague ecn_fallback=1"` in
//! shells. Two flows of one run may use different values, which the
//! references cannot do.
//!
//! The values travel to the congestion control through the BPF map
//! `emu_cc_params` (`bpf/params.h`): one entry per network namespace and
//! remote port, each a fixed array of `u32` slots whose meaning each
//! congestion control defines. A connection reads its entry once, in
//! `init`; nothing is read per ACK.

use crate::catalogue::Endpoint;
use std::fmt::Write as _;

pub use crate::parameter_tables::{
    Kind, Parameter, CUBIC_SCE, DCTCP, PRAGUE, SCE_WINDOW, SLOTS, VEGAS,
};

/// One flow's settings of one of emu's congestion controls: every slot,
/// the defaults where the flow set nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub endpoint: &'static Endpoint,
    pub values: [u32; SLOTS],
    /// What the flow set, by name, as written, in order (for results and
    /// messages).
    pub given: Vec<(&'static str, String)>,
}

impl Settings {
    /// The reference's defaults.
    pub fn defaults(endpoint: &'static Endpoint) -> Settings {
        let mut values = [0; SLOTS];
        for p in endpoint.parameters {
            values[p.slot] = p.default;
        }
        Settings {
            endpoint,
            values,
            given: Vec::new(),
        }
    }

    /// The value of the parameter `name`, in its slot's unit.
    pub fn get(&self, name: &str) -> Option<u32> {
        let p = self.endpoint.parameters.iter().find(|p| p.name == name)?;
        Some(self.values[p.slot])
    }
}

/// Splits a congestion control's text (`"prague ecn_fallback=1"`) into its
/// name and the rest, the settings, trimmed.
pub fn split(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (text, ""),
    }
}

/// Reads the settings `text` (`key=value` words) of `endpoint`. The error
/// names the word at fault and what it takes.
pub fn parse(endpoint: &'static Endpoint, text: &str) -> Result<Settings, String> {
    let mut settings = Settings::defaults(endpoint);
    for word in text.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!(
                "'{word}': a setting is KEY=VALUE ({})",
                names(endpoint)
            ));
        };
        let Some(parameter) = endpoint.parameters.iter().find(|p| p.name == key) else {
            return Err(if endpoint.parameters.is_empty() {
                format!("'{key}': {} takes no settings", endpoint.name)
            } else {
                format!(
                    "'{key}' is not a setting of {} ({}; `emu cc {}` explains each)",
                    endpoint.name,
                    names(endpoint),
                    endpoint.name
                )
            });
        };
        if settings.given.iter().any(|(k, _)| *k == parameter.name) {
            return Err(format!("'{key}' is set twice"));
        }
        settings.values[parameter.slot] = value_of(parameter, value)
            .map_err(|takes| format!("{key}={value}: {key} takes {takes}"))?;
        settings.given.push((parameter.name, value.to_string()));
    }
    crate::versions::apply(endpoint, &mut settings.values, &settings.given)?;
    Ok(settings)
}

/// Why settings after one of the kernel's congestion controls (`name`)
/// are refused: its parameters are the machine's, not a flow's.
pub fn kernels_refused(name: &str, settings: &str) -> String {
    let takers: Vec<&str> = crate::ENDPOINTS
        .iter()
        .filter(|e| !e.parameters.is_empty())
        .map(|e| e.name)
        .collect();
    format!(
        "'{settings}': {name} is the kernel's, whose parameters are the machine's; emu sets \
         those of its own ({}) per flow",
        takers.join(", ")
    )
}

fn names(endpoint: &Endpoint) -> String {
    endpoint
        .parameters
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` in the slot's unit, or what the parameter takes.
fn value_of(parameter: &Parameter, value: &str) -> Result<u32, String> {
    match parameter.kind {
        Kind::Integer { min, max } => value
            .parse::<u32>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| format!("an integer from {min} to {max}")),
        Kind::Duration { max_us } => duration_us(value)
            .filter(|v| *v <= u64::from(max_us))
            .map(|v| v as u32)
            .ok_or_else(|| {
                format!(
                    "a time with its unit (us, ms or s), at most {} s",
                    max_us / 1_000_000
                )
            }),
        Kind::Choice(words) => words
            .iter()
            .position(|w| *w == value)
            .or_else(|| value.parse::<usize>().ok().filter(|i| *i < words.len()))
            .map(|i| i as u32)
            .ok_or_else(|| {
                let listed: Vec<String> = words
                    .iter()
                    .enumerate()
                    .map(|(i, w)| format!("{w} ({i})"))
                    .collect();
                format!("one of {}", listed.join(", "))
            }),
    }
}

/// A time with its unit, in whole microseconds.
fn duration_us(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return None,
    };
    let us = number * scale;
    (us.is_finite() && us >= 0.0 && us.fract() == 0.0).then_some(us as u64)
}

/// `emu cc NAME`'s text: each parameter, its default and meaning.
pub fn describe(endpoint: &Endpoint) -> String {
    let mut text = format!("{}: {}\n", endpoint.name, endpoint.summary);
    if let Some(reference) = crate::linux_ccs::reference_line(endpoint.name) {
        let _ = writeln!(text, "{reference}");
    }
    if endpoint.parameters.is_empty() {
        text += "\nIt takes no settings.\n";
        describe_versions(endpoint, &mut text);
        return text;
    }
    let _ = write!(
        text,
        "\nSettings, after the name (cc = \"{} KEY=VALUE ...\"; shells: --cc \"{} KEY=VALUE\"),\n\
         each per flow, with the reference's default:\n\n",
        endpoint.name, endpoint.name
    );
    for p in endpoint.parameters {
        let default = match p.kind {
            Kind::Choice(words) => format!("{} ({})", words[p.default as usize], p.default),
            Kind::Duration { .. } => format!("{}us", p.default),
            Kind::Integer { .. } => p.default.to_string(),
        };
        let takes = match p.kind {
            Kind::Integer { min, max } => format!("{min} to {max}"),
            Kind::Duration { max_us } => format!("a time, at most {} s", max_us / 1_000_000),
            Kind::Choice(words) => words.join(" | "),
        };
        let _ = writeln!(
            text,
            "  {} = {default}\n      {}\n      takes {takes}; the reference's {}",
            p.name, p.meaning, p.reference
        );
    }
    describe_versions(endpoint, &mut text);
    text
}

/// The commit each version follows, for `emu cc NAME`.
fn describe_versions(endpoint: &Endpoint, text: &mut String) {
    let versions = crate::versions::of(endpoint);
    match versions {
        [] => return,
        [one] => {
            let _ = writeln!(text, "\nIt follows {}.", one.follows);
            return;
        }
        _ => *text += "\nVersions (version=NAME), each the commit it follows:\n\n",
    }
    for v in versions {
        let _ = writeln!(text, "  {}: {}", v.name, v.follows);
        for (name, value) in v.defaults {
            let _ = writeln!(text, "      {name} defaults to {value} there");
        }
        if !v.lacks.is_empty() {
            let _ = writeln!(text, "      takes no {}", v.lacks.join(", "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::find;

    fn prague() -> &'static Endpoint {
        find("prague").unwrap()
    }

    #[test]
    fn defaults_are_the_references() {
        let s = Settings::defaults(prague());
        assert_eq!(s.get("burst_shift"), Some(12));
        assert_eq!(s.get("rtt_scaling"), Some(1));
        assert_eq!(s.get("rtt_target"), Some(25_000));
        assert_eq!(s.get("rtt_transition"), Some(500));
        assert_eq!(s.get("ecn_fallback"), Some(0));
        let d = Settings::defaults(find("dctcp").unwrap());
        assert_eq!(
            (d.get("shift_g"), d.get("alpha_on_init")),
            (Some(4), Some(1024))
        );
        let c = Settings::defaults(find("cubic-sce").unwrap());
        assert_eq!(
            (
                c.get("beta"),
                c.get("bic_scale"),
                c.get("hystart_ack_delta")
            ),
            (Some(717), Some(41), Some(2000))
        );
    }

    #[test]
    fn settings_are_read_in_their_units() {
        let s = parse(
            prague(),
            "ecn_fallback=1 rtt_target=10ms rtt_scaling=scalable burst_shift=10",
        )
        .unwrap();
        assert_eq!(s.get("ecn_fallback"), Some(1));
        assert_eq!(s.get("rtt_target"), Some(10_000));
        assert_eq!(s.get("rtt_scaling"), Some(2));
        assert_eq!(s.get("burst_shift"), Some(10));
        assert_eq!(s.get("rtt_transition"), Some(500), "the rest stay default");
        assert_eq!(s.given.len(), 4);
        assert_eq!(
            parse(prague(), "rtt_scaling=3").unwrap().get("rtt_scaling"),
            Some(3)
        );
        assert_eq!(
            parse(prague(), "ecn_fallback=detect")
                .unwrap()
                .get("ecn_fallback"),
            Some(2)
        );
        assert_eq!(
            parse(prague(), "rtt_target=1.5ms")
                .unwrap()
                .get("rtt_target"),
            Some(1500)
        );
    }

    #[test]
    fn a_bad_setting_is_named_with_what_it_takes() {
        let e = parse(prague(), "ecn_fallback=3").unwrap_err();
        assert!(
            e.contains("ecn_fallback=3") && e.contains("fallback (1)"),
            "{e}"
        );
        let e = parse(prague(), "rtt_target=10").unwrap_err();
        assert!(e.contains("with its unit"), "{e}");
        let e = parse(prague(), "fallback=1").unwrap_err();
        assert!(
            e.contains("not a setting of prague") && e.contains("ecn_fallback"),
            "{e}"
        );
        let e = parse(prague(), "ecn_fallback").unwrap_err();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = parse(prague(), "burst_shift=1 burst_shift=2").unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = parse(&BARE, "x=1").unwrap_err();
        assert!(e.contains("takes no settings"), "{e}");
        assert!(describe(&BARE).contains("It takes no settings"));
    }

    /// A congestion control without settings.
    const BARE: Endpoint = Endpoint {
        name: "bare",
        kernel_name: "bare",
        map: "emu_bare",
        marking: crate::Marking::Ect0,
        without_ecn: "Reno",
        summary: "none",
        parameters: &[],
        settings_id: 0,
    };

    #[test]
    fn a_version_brings_its_defaults_and_a_bad_one_is_named() {
        let s = parse(prague(), "version=0.5 rtt_target=10ms").unwrap();
        assert_eq!(s.get("version"), Some(1));
        assert_eq!(s.get("rtt_scaling"), Some(0), "0.5's none");
        assert_eq!(s.get("rtt_target"), Some(10_000), "the flow's own");
        assert_eq!(s.get("ecn_fallback"), Some(1));
        let e = parse(prague(), "version=2019").unwrap_err();
        assert!(
            e.contains("version=2019") && e.contains("0.6 (0)") && e.contains("0.5 (1)"),
            "{e}"
        );
        let e = parse(prague(), "tso_floor=1 version=0.5").unwrap_err();
        assert!(
            e.contains("'tso_floor'") && e.contains("version 0.5"),
            "{e}"
        );
        let text = describe(prague());
        assert!(text.contains("  0.5: L4STeam/linux e741f5ac"), "{text}");
        assert!(
            text.contains("rtt_transition defaults to 100 there"),
            "{text}"
        );
    }

    #[test]
    fn dctcp_names_its_two_versions_and_their_commits() {
        let dctcp = find("dctcp").unwrap();
        assert_eq!(parse(dctcp, "").unwrap().get("version"), Some(0));
        assert_eq!(
            parse(dctcp, "version=sce-2019").unwrap().get("version"),
            Some(1)
        );
        let e = parse(dctcp, "version=2019").unwrap_err();
        assert!(e.contains("linux (0)") && e.contains("sce-2019 (1)"), "{e}");
        let text = describe(dctcp);
        assert!(text.contains("  sce-2019: chromi/sce c54f3c5a"), "{text}");
        assert!(text.contains("  linux: torvalds/linux"), "{text}");
    }

    #[test]
    fn the_name_and_settings_split_at_the_first_space() {
        assert_eq!(
            split(" prague  ecn_fallback=1 "),
            ("prague", "ecn_fallback=1")
        );
        assert_eq!(split("cubic"), ("cubic", ""));
    }

    #[test]
    fn slots_are_distinct_and_in_range() {
        for endpoint in &crate::ENDPOINTS {
            for (i, p) in endpoint.parameters.iter().enumerate() {
                assert!(p.slot < SLOTS, "{}", p.name);
                for q in &endpoint.parameters[i + 1..] {
                    assert_ne!(p.slot, q.slot, "{} and {}", p.name, q.name);
                    assert_ne!(p.name, q.name);
                }
                // The default is a value the parameter takes.
                let written = match p.kind {
                    Kind::Duration { .. } => format!("{}us", p.default),
                    _ => p.default.to_string(),
                };
                assert_eq!(value_of(p, &written), Ok(p.default), "{}", p.name);
            }
        }
    }

    #[test]
    fn describe_lists_each_parameter_with_its_default() {
        let text = describe(prague());
        for p in PRAGUE {
            assert!(text.contains(&format!("  {} = ", p.name)), "{text}");
            assert!(text.contains(p.reference), "{text}");
        }
        assert!(text.contains("rtt_scaling = rate (1)"), "{text}");
        let reno_sce = describe(find("reno-sce").unwrap());
        assert!(reno_sce.contains("unit = rcv_mss (0)"), "{reno_sce}");
        let sce = parse(find("dctcp-sce").unwrap(), "unit=mss").unwrap();
        assert_eq!(sce.get("unit"), Some(1));
        assert!(
            reno_sce.contains("It follows chromi/sce 07bbe597"),
            "{reno_sce}"
        );
        let cubic = describe(find("cubic-sce").unwrap());
        for p in CUBIC_SCE {
            assert!(cubic.contains(&format!("  {} = ", p.name)), "{cubic}");
        }
        assert!(cubic.contains("beta = 717"), "{cubic}");
    }
}
