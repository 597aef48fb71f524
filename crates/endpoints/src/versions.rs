//! The versions of its reference a congestion control can follow, chosen
//! per flow by its `version` setting (`cc = "prague version=0.5"`): the
//! commit each follows, the module defaults in which it differs from the
//! first, and the settings it does not have. `emu cc NAME` lists them.

use crate::catalogue::Endpoint;
use crate::parameters::Settings;

/// One version of a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// The value of the `version` setting that chooses it.
    pub name: &'static str,
    /// The public source it follows, by repository, commit and file.
    pub follows: &'static str,
    /// Its module's defaults where they differ from the first version's,
    /// by setting name, in the slot's unit.
    pub defaults: &'static [(&'static str, u32)],
    /// Settings its module does not have (refused with this version).
    pub lacks: &'static [&'static str],
}

/// TCP Prague's: the later line with a fractional window, and 0.5, the
/// module of the kernel the SCE-L4S bakeoff ran.
pub const PRAGUE: &[Version] = &[
    Version {
        name: "0.6",
        follows: "L4STeam/linux 02573a21, net/ipv4/tcp_prague.c (MODULE_VERSION 0.6: the \
                  fractional window frac_cwnd), with the differences docs/endpoints.md lists",
        defaults: &[],
        lacks: &[],
    },
    Version {
        name: "0.5",
        follows: "L4STeam/linux e741f5ac (2020-04-08, the SCE-L4S bakeoff's kernel), \
                  net/ipv4/tcp_prague.c (MODULE_VERSION 0.5: the carry cwnd_cnt)",
        defaults: &[
            ("rtt_scaling", 0),
            ("rtt_target", 15_000),
            ("rtt_transition", 100),
            ("ecn_fallback", 1),
        ],
        lacks: &["max_tso_segs", "tso_floor"],
    },
];

/// The versions `endpoint` can follow; empty where it follows one only.
pub fn of(endpoint: &Endpoint) -> &'static [Version] {
    match endpoint.name {
        "prague" => PRAGUE,
        _ => &[],
    }
}

/// Gives `settings` its chosen version's defaults where the flow set
/// nothing, and refuses a setting that version's module lacks.
pub fn apply(settings: &mut Settings) -> Result<(), String> {
    let versions = of(settings.endpoint);
    let Some(chosen) = settings
        .get("version")
        .and_then(|i| versions.get(i as usize))
    else {
        return Ok(());
    };
    for (name, _) in &settings.given {
        if chosen.lacks.contains(name) {
            return Err(format!(
                "'{name}': {} version {} has no such setting (its module lacks it; \
                 drop it or choose another version)",
                settings.endpoint.name, chosen.name
            ));
        }
    }
    for (name, value) in chosen.defaults {
        let parameter = settings
            .endpoint
            .parameters
            .iter()
            .find(|p| p.name == *name);
        if let Some(p) = parameter {
            if !settings.given.iter().any(|(k, _)| k == name) {
                settings.values[p.slot] = *value;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::find;
    use crate::parameters::parse;

    fn prague() -> &'static Endpoint {
        find("prague").unwrap()
    }

    #[test]
    fn version_05_takes_its_modules_defaults() {
        let s = parse(prague(), "version=0.5").unwrap();
        assert_eq!(s.get("version"), Some(1));
        assert_eq!(s.get("rtt_scaling"), Some(0), "none");
        assert_eq!(s.get("rtt_target"), Some(15_000));
        assert_eq!(s.get("rtt_transition"), Some(100));
        assert_eq!(s.get("ecn_fallback"), Some(1));
        assert_eq!(s.get("burst_shift"), Some(12));
        let latest = parse(prague(), "").unwrap();
        assert_eq!(latest.get("version"), Some(0));
        assert_eq!(latest.get("rtt_target"), Some(25_000));
    }

    #[test]
    fn what_the_flow_sets_wins_over_the_versions_defaults() {
        let s = parse(prague(), "ecn_fallback=0 version=0.5 rtt_target=10ms").unwrap();
        assert_eq!(s.get("ecn_fallback"), Some(0));
        assert_eq!(s.get("rtt_target"), Some(10_000));
        assert_eq!(s.get("rtt_transition"), Some(100));
    }

    #[test]
    fn a_setting_the_version_lacks_or_a_bad_version_is_refused() {
        let e = parse(prague(), "version=0.5 tso_floor=1").unwrap_err();
        assert!(
            e.contains("'tso_floor'") && e.contains("version 0.5"),
            "{e}"
        );
        let e = parse(prague(), "version=2019").unwrap_err();
        assert!(
            e.contains("version=2019") && e.contains("0.6 (0)") && e.contains("0.5 (1)"),
            "{e}"
        );
        assert!(parse(prague(), "version=0.6 tso_floor=1").is_ok());
    }

    #[test]
    fn every_versions_defaults_name_its_settings() {
        for endpoint in &crate::ENDPOINTS {
            for v in of(endpoint) {
                for (name, _) in v.defaults {
                    assert!(
                        endpoint.parameters.iter().any(|p| p.name == *name),
                        "{} {}: {name}",
                        endpoint.name,
                        v.name
                    );
                }
                for name in v.lacks {
                    assert!(endpoint.parameters.iter().any(|p| p.name == *name));
                }
            }
            if !of(endpoint).is_empty() {
                assert!(endpoint.parameters.iter().any(|p| p.name == "version"));
            }
        }
    }
}
