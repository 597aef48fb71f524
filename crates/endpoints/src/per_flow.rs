//! A flow's settings handed to its connections: entries of the BPF map
//! `emu_cc_params` (`bpf/params.h`), keyed by network namespace, remote
//! port and congestion control, written before a run's flows start and
//! removed when the run ends.
//!
//! A connection reads the entry for its remote port, else its namespace's
//! (port 0), else uses the reference's defaults, once, when it starts.
//! Every emu on the machine shares the map (as the registrations); the
//! namespace in the key keeps their entries apart.
//!
//! Cost: one map update per flow per run; nothing per packet.

use crate::error::{EndpointError, Result};
use crate::object::CC_PARAMS;
use crate::parameters::{Settings, SLOTS};
use crate::registry::Loaded;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

/// `struct emu_cc_key` and `struct emu_cc_params`, as bytes.
fn key(netns: u64, remote_port: u16, settings_id: u16) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&netns.to_ne_bytes());
    // The port in network byte order, as the socket keeps it.
    key[8..10].copy_from_slice(&remote_port.to_be_bytes());
    key[10..12].copy_from_slice(&settings_id.to_ne_bytes());
    key
}

fn value(settings: &Settings) -> [u8; SLOTS * 4] {
    let mut value = [0u8; SLOTS * 4];
    for (slot, v) in settings.values.iter().enumerate() {
        value[slot * 4..slot * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    value
}

/// Entries written for one run; dropping it removes them.
pub struct Applied {
    map: MapHandle,
    keys: Vec<[u8; 16]>,
}

impl Applied {
    /// Hands `settings` to the connections of namespace `netns` (its
    /// cookie) toward `remote_port`, or to all of the namespace's with
    /// port 0, until this value drops.
    pub fn add(&mut self, netns: u64, remote_port: u16, settings: &Settings) -> Result<()> {
        if settings.endpoint.settings_id == 0 {
            return Ok(());
        }
        let key = key(netns, remote_port, settings.endpoint.settings_id);
        self.map
            .update(&key, &value(settings), MapFlags::ANY)
            .map_err(|e| {
                EndpointError(format!(
                    "handing {}'s settings to its connections: {e}",
                    settings.endpoint.name
                ))
            })?;
        self.keys.push(key);
        Ok(())
    }
}

impl Loaded {
    /// An empty set of entries, to [`Applied::add`] settings to.
    pub fn settings(&self) -> Result<Applied> {
        let map = self
            .object()
            .maps()
            .find(|m| m.name().to_string_lossy() == CC_PARAMS)
            .ok_or_else(|| EndpointError(format!("the object has no map {CC_PARAMS}")))?;
        let map = MapHandle::try_from(&map)
            .map_err(|e| EndpointError(format!("the map {CC_PARAMS}: {e}")))?;
        Ok(Applied {
            map,
            keys: Vec::new(),
        })
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        for key in &self.keys {
            let _ = self.map.delete(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::find;
    use crate::parameters::parse;

    #[test]
    fn a_key_and_value_are_laid_out_as_the_programs_read_them() {
        let k = key(0x0102_0304_0506_0708, 5201, 2);
        assert_eq!(&k[..8], &0x0102_0304_0506_0708u64.to_ne_bytes());
        assert_eq!(&k[8..10], &[0x14, 0x51], "network byte order");
        assert_eq!(&k[10..12], &2u16.to_ne_bytes());
        assert_eq!(&k[12..], &[0; 4]);
        let s = parse(find("prague").unwrap(), "ecn_fallback=2").unwrap();
        let v = value(&s);
        assert_eq!(&v[0..4], &12u32.to_ne_bytes(), "burst_shift in slot 0");
        assert_eq!(&v[20..24], &2u32.to_ne_bytes(), "ecn_fallback in slot 5");
    }
}
