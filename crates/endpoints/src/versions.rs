//! The versions of its reference a congestion control can follow, chosen
//! per flow by its `version` setting (`cc = "prague version=0.5"`): the
//! commit each follows, the module defaults in which it differs from the
//! first, and the settings it does not have. `emu cc NAME` lists them.

use crate::catalogue::Endpoint;
use crate::parameter_tables::SLOTS;

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

/// DCTCP's: the kernel's since Linux 5.1, and the SCE tree's of 2019,
/// the DCTCP the SCE draft's tests ran beside DCTCP-SCE.
pub const DCTCP: &[Version] = &[
    Version {
        name: "linux",
        follows: "torvalds/linux, net/ipv4/tcp_dctcp.c as of Linux 5.1 and later (alpha from \
                  delivered_ce; a halving on fast retransmit), without 6.0's PLB; the \
                  differences docs/endpoints.md lists",
        defaults: &[],
        lacks: &[],
    },
    Version {
        name: "sce-2019",
        follows: "chromi/sce c54f3c5a, net/ipv4/tcp_dctcp.c (as Linux before 5.1: alpha from \
                  the bytes of ACKs with ECE; a fast retransmit cut by alpha, a halving only \
                  on timeout); the tree's tcp_dctcp.c is not stored at 07bbe597, and its other \
                  stored version, 117dae93, is of 2022 or later (PLB)",
        defaults: &[],
        lacks: &[],
    },
];

/// The SCE senders' one version each: the SCE tree's module as read
/// here. The tree of the SCE-L4S bakeoff (chromi/sce 0eddf2ad, 2020-03-09)
/// and that of the SCE draft's tests (before July 2019) were not readable,
/// and the dates of the commits read are not known here.
pub const RENO_SCE: &[Version] = &[only(
    "07bbe597",
    "chromi/sce 07bbe597, net/ipv4/tcp_reno_sce.c, with the differences docs/endpoints.md \
     lists (not the bakeoff's tree, 0eddf2ad, which was not readable)",
)];

pub const CUBIC_SCE: &[Version] = &[only(
    "0139ea04",
    "chromi/sce 0139ea04, net/ipv4/tcp_cubic_sce.c (MODULE_VERSION 2.3), with the differences \
     docs/endpoints.md lists (not the bakeoff's tree, 0eddf2ad, which was not readable)",
)];

pub const DCTCP_SCE: &[Version] = &[only(
    "9fae76b9",
    "chromi/sce 9fae76b9, net/ipv4/tcp_dctcp_sce.c, with the differences docs/endpoints.md \
     lists (not the bakeoff's tree, 0eddf2ad, which was not readable)",
)];

/// A version a congestion control follows alone: no setting chooses it.
const fn only(name: &'static str, follows: &'static str) -> Version {
    Version {
        name,
        follows,
        defaults: &[],
        lacks: &[],
    }
}

/// The versions `endpoint` can follow (the first is the default); empty
/// where no commit is named.
pub fn of(endpoint: &Endpoint) -> &'static [Version] {
    match endpoint.name {
        "prague" => PRAGUE,
        "dctcp" => DCTCP,
        "reno-sce" => RENO_SCE,
        "cubic-sce" => CUBIC_SCE,
        "dctcp-sce" => DCTCP_SCE,
        _ => &[],
    }
}

/// Gives a flow's `values` (every slot, as it set them or the defaults)
/// its chosen version's defaults where it set nothing (`given` names what
/// it set), and refuses a setting that version's module lacks.
pub fn apply(
    endpoint: &Endpoint,
    values: &mut [u32; SLOTS],
    given: &[(&'static str, String)],
) -> Result<(), String> {
    let Some(chosen) = endpoint
        .parameters
        .iter()
        .find(|p| p.name == "version")
        .and_then(|p| of(endpoint).get(values[p.slot] as usize))
    else {
        return Ok(());
    };
    for (name, _) in given {
        if chosen.lacks.contains(name) {
            return Err(format!(
                "'{name}': {} version {} has no such setting (its module lacks it; \
                 drop it or choose another version)",
                endpoint.name, chosen.name
            ));
        }
    }
    for (name, value) in chosen.defaults {
        let parameter = endpoint.parameters.iter().find(|p| p.name == *name);
        if let Some(p) = parameter {
            if !given.iter().any(|(k, _)| k == name) {
                values[p.slot] = *value;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::find;

    /// Prague's defaults with `version` at `version` and `given` set.
    fn prague(version: u32, given: &[(&'static str, u32)]) -> Result<[u32; SLOTS], String> {
        let endpoint = find("prague").unwrap();
        let slot = |name| {
            endpoint
                .parameters
                .iter()
                .find(|p| p.name == name)
                .unwrap()
                .slot
        };
        let mut values = [0; SLOTS];
        for p in endpoint.parameters {
            values[p.slot] = p.default;
        }
        values[slot("version")] = version;
        let mut named = vec![("version", version.to_string())];
        for (name, value) in given {
            values[slot(name)] = *value;
            named.push((name, value.to_string()));
        }
        apply(endpoint, &mut values, &named).map(|()| values)
    }

    #[test]
    fn version_05_takes_its_modules_defaults_where_the_flow_set_none() {
        // Slots: rtt_scaling 2, rtt_target 3, rtt_transition 4, ecn_fallback 5.
        let v = prague(1, &[]).unwrap();
        assert_eq!(&v[2..6], &[0, 15_000, 100, 1]);
        assert_eq!(v[0], 12, "burst_shift as 0.6");
        let v = prague(0, &[]).unwrap();
        assert_eq!(&v[2..6], &[1, 25_000, 500, 0]);
        let v = prague(1, &[("ecn_fallback", 0), ("rtt_target", 10_000)]).unwrap();
        assert_eq!(&v[2..6], &[0, 10_000, 100, 0]);
    }

    #[test]
    fn a_setting_the_version_lacks_is_refused() {
        let e = prague(1, &[("tso_floor", 1)]).unwrap_err();
        assert!(
            e.contains("'tso_floor'") && e.contains("version 0.5"),
            "{e}"
        );
        assert!(prague(0, &[("tso_floor", 1)]).is_ok());
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
            // A choice needs the setting that makes it.
            if of(endpoint).len() > 1 {
                assert!(endpoint.parameters.iter().any(|p| p.name == "version"));
            }
        }
    }
}
