//! The control socket's language, version 1: one JSON object a line each
//! way. A request names its operation (`op`) and may carry an `id` the
//! reply echoes and the version `v` it speaks; every reply has `ok`, and
//! a refusal one `error` line that says what to write instead.
//! docs/guide.md ("Steering a running path") is its schema.

use aqm::QueueSpec;
use emu_core::time::parse_duration;
use emu_core::{Nanos, Rate};
use link::Setting;
use serde_json::{json, Map, Value};

/// The protocol's version; a request that asks for another is refused.
pub const VERSION: u64 = 1;

/// The shortest interval a subscription may ask for.
pub const MIN_EVERY: Nanos = 10_000_000;

/// When a change takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The next instant every element can take it.
    Now,
    /// This long after the request is read.
    After(Nanos),
    /// At this run time (ns since the run's origin).
    At(Nanos),
}

/// One setting of one element, as a request names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    /// The element, `SHELL.DIRECTION` (`1.uplink`).
    pub element: String,
    pub setting: Setting,
}

/// What a client asks.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Settings and counters of the elements named (all if none).
    Get {
        elements: Vec<String>,
    },
    /// Settings taken together at one instant; `given` is the request's
    /// own `set` object, kept for `control.jsonl`.
    Set {
        settings: Vec<Named>,
        when: When,
        given: Map<String, Value>,
    },
    /// Telemetry every `every` ns of the elements named (all if none).
    Watch {
        every: Nanos,
        elements: Vec<String>,
    },
    Unwatch,
}

/// A request and the id its reply echoes.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub id: Option<Value>,
    pub request: Request,
}

/// Reads one request line. The error is the refusal's one line; the id is
/// kept where the line was an object that had one.
pub fn parse(line: &str) -> Result<Envelope, (Option<Value>, String)> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        (
            None,
            format!("not a JSON object: {e} (write one object a line, e.g. {{\"op\":\"get\"}})"),
        )
    })?;
    let Value::Object(object) = value else {
        return Err((
            None,
            "not a JSON object (write one object a line, e.g. {\"op\":\"get\"})".into(),
        ));
    };
    let id = object.get("id").cloned();
    let request = read_request(&object).map_err(|e| (id.clone(), e))?;
    Ok(Envelope { id, request })
}

fn read_request(object: &Map<String, Value>) -> Result<Request, String> {
    if let Some(v) = object.get("v") {
        if v.as_u64() != Some(VERSION) {
            return Err(format!(
                "protocol version {v} is not spoken here: emu speaks version {VERSION}"
            ));
        }
    }
    let op = object
        .get("op")
        .and_then(Value::as_str)
        .ok_or("no \"op\": ask one of get, set, watch, unwatch (e.g. {\"op\":\"get\"})")?;
    let known = |keys: &[&str]| -> Result<(), String> {
        match object
            .keys()
            .find(|k| !["op", "id", "v"].contains(&k.as_str()) && !keys.contains(&k.as_str()))
        {
            Some(k) => Err(format!("'{op}' takes no \"{k}\" (it takes {})", list(keys))),
            None => Ok(()),
        }
    };
    match op {
        "get" => {
            known(&["elements"])?;
            Ok(Request::Get {
                elements: elements(object)?,
            })
        }
        "set" => {
            known(&["set", "after", "at"])?;
            read_set(object)
        }
        "watch" => {
            known(&["every", "elements"])?;
            let every = match object.get("every") {
                None => return Err("'watch' needs \"every\", e.g. \"100ms\"".into()),
                Some(v) => duration(v).map_err(|e| format!("every: {e}"))?,
            };
            if every < MIN_EVERY {
                return Err(format!(
                    "every {}: telemetry comes at most every 10ms",
                    emu_core::time::format_duration(every)
                ));
            }
            Ok(Request::Watch {
                every,
                elements: elements(object)?,
            })
        }
        "unwatch" => {
            known(&[])?;
            Ok(Request::Unwatch)
        }
        other => Err(format!(
            "unknown op '{other}': ask one of get, set, watch, unwatch"
        )),
    }
}

fn list(keys: &[&str]) -> String {
    if keys.is_empty() {
        "nothing else".into()
    } else {
        keys.iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn elements(object: &Map<String, Value>) -> Result<Vec<String>, String> {
    match object.get("elements") {
        None => Ok(Vec::new()),
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| {
                n.as_str()
                    .map(String::from)
                    .ok_or_else(|| format!("elements: {n} is not a name such as \"0.uplink\""))
            })
            .collect(),
        Some(other) => Err(format!(
            "elements: {other} is not a list of names such as [\"0.uplink\"]"
        )),
    }
}

fn read_set(object: &Map<String, Value>) -> Result<Request, String> {
    let Some(Value::Object(given)) = object.get("set") else {
        return Err("'set' needs \"set\": {\"SHELL.DIRECTION.SETTING\": VALUE, ...}, e.g. {\"0.uplink.rate\": \"5mbit\"}".into());
    };
    if given.is_empty() {
        return Err("'set' with nothing to set".into());
    }
    let settings = given
        .iter()
        .map(|(name, value)| setting(name, value))
        .collect::<Result<Vec<_>, _>>()?;
    let when = match (object.get("after"), object.get("at")) {
        (Some(_), Some(_)) => return Err("give \"after\" or \"at\", not both".into()),
        (Some(after), None) => When::After(duration(after).map_err(|e| format!("after: {e}"))?),
        (None, Some(at)) => When::At(duration(at).map_err(|e| format!("at: {e}"))?),
        (None, None) => When::Now,
    };
    Ok(Request::Set {
        settings,
        when,
        given: given.clone(),
    })
}

/// `1.uplink.rate` = `"5mbit"`: the element and the setting.
pub fn setting(name: &str, value: &Value) -> Result<Named, String> {
    let Some((element, kind)) = name.rsplit_once('.') else {
        return Err(format!(
            "'{name}' names no setting: write SHELL.DIRECTION.SETTING, e.g. 0.uplink.rate"
        ));
    };
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(format!(
                "{name}: {other} is not a value (write it as a string, e.g. \"5mbit\")"
            ))
        }
    };
    let bad = |e: String| format!("{name}: '{text}': {e}");
    let setting = match kind {
        "rate" => Setting::Rate(Rate::parse(&text).map_err(|e| bad(e.to_string()))?),
        "delay" => Setting::Delay(duration_text(&text).map_err(bad)?),
        "jitter" => Setting::Jitter(duration_text(&text).map_err(bad)?),
        "loss" => Setting::Loss(probability(&text).map_err(bad)?),
        "queue" => Setting::QueueParameters(QueueSpec::parse(&text).map_err(|e| bad(e.to_string()))?),
        "queue_replace" => {
            Setting::QueueReplaced(QueueSpec::parse(&text).map_err(|e| bad(e.to_string()))?)
        }
        other => {
            return Err(format!(
                "{name}: no setting '{other}' (settings: rate, delay, loss, jitter, queue, queue_replace)"
            ))
        }
    };
    Ok(Named {
        element: element.to_string(),
        setting,
    })
}

/// A time as a string with a unit (`"30ms"`; a bare number is ms, as the
/// delay shell reads it).
fn duration_text(text: &str) -> Result<Nanos, String> {
    if text.starts_with('-') {
        return Err("a time cannot be negative".into());
    }
    let text = if text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        format!("{text}ms")
    } else {
        text.to_string()
    };
    parse_duration(&text).map_err(|e| e.to_string())
}

fn duration(value: &Value) -> Result<Nanos, String> {
    match value {
        Value::String(s) => duration_text(s),
        other => Err(format!("{other} is not a time such as \"100ms\"")),
    }
}

/// `1%` or `0.01`.
fn probability(text: &str) -> Result<f64, String> {
    let p = match text.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.parse::<f64>(),
    }
    .map_err(|_| "not a probability (write 1% or 0.01)".to_string())?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err("not a probability from 0 to 1 (write 1% or 0.01)".into())
    }
}

/// A reply: `ok` with the fields given, the request's id echoed.
pub fn reply(id: &Option<Value>, fields: Value) -> String {
    let mut object = Map::new();
    object.insert("ok".into(), Value::Bool(true));
    if let Some(id) = id {
        object.insert("id".into(), id.clone());
    }
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    Value::Object(object).to_string()
}

/// A refusal: one line saying why.
pub fn refusal(id: &Option<Value>, error: &str) -> String {
    let mut object = json!({"ok": false, "error": error});
    if let Some(id) = id {
        object["id"] = id.clone();
    }
    object.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(line: &str) -> Request {
        parse(line).unwrap().request
    }

    fn refused(line: &str) -> String {
        parse(line).unwrap_err().1
    }

    #[test]
    fn a_set_names_each_element_and_setting_and_its_instant() {
        let Request::Set { settings, when, .. } = request(
            r#"{"v":1,"op":"set","set":{"1.uplink.rate":"5mbit","1.uplink.delay":"30","0.downlink.queue_replace":"pie"},"after":"500ms"}"#,
        ) else {
            panic!("not a set")
        };
        assert_eq!(when, When::After(500_000_000));
        assert_eq!(settings.len(), 3);
        let rate = settings
            .iter()
            .find(|s| s.setting.name() == "rate")
            .unwrap();
        assert_eq!(rate.element, "1.uplink");
        assert_eq!(rate.setting, Setting::Rate(Rate::parse("5mbit").unwrap()));
        let delay = settings
            .iter()
            .find(|s| s.setting.name() == "delay")
            .unwrap();
        assert_eq!(delay.setting, Setting::Delay(30_000_000));
        assert!(matches!(
            request(r#"{"op":"set","set":{"0.uplink.loss":"1%"},"at":"12s"}"#),
            Request::Set {
                when: When::At(12_000_000_000),
                ..
            }
        ));
    }

    #[test]
    fn bad_requests_are_refused_in_one_line_that_says_what_to_write() {
        for (line, says) in [
            ("get", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (r#"{"op":"fly"}"#, "unknown op 'fly'"),
            (r#"{"v":2,"op":"get"}"#, "version 1"),
            (
                r#"{"op":"set","set":{"0.uplink.rate":"fast"}}"#,
                "0.uplink.rate: 'fast'",
            ),
            (
                r#"{"op":"set","set":{"0.uplink.speed":"5mbit"}}"#,
                "no setting 'speed'",
            ),
            (
                r#"{"op":"set","set":{"rate":"5mbit"}}"#,
                "SHELL.DIRECTION.SETTING",
            ),
            (
                r#"{"op":"set","set":{"0.uplink.loss":"150%"}}"#,
                "from 0 to 1",
            ),
            (
                r#"{"op":"set","set":{"0.uplink.delay":"-5ms"}}"#,
                "negative",
            ),
            (r#"{"op":"set","set":{}}"#, "nothing to set"),
            (
                r#"{"op":"set","set":{"0.uplink.rate":"5mbit"},"after":"1s","at":"2s"}"#,
                "not both",
            ),
            (r#"{"op":"watch","every":"5ms"}"#, "at most every 10ms"),
            (r#"{"op":"watch"}"#, "needs \"every\""),
            (r#"{"op":"get","every":"1s"}"#, "takes no \"every\""),
        ] {
            let error = refused(line);
            assert!(error.contains(says), "{line}: {error}");
            assert!(!error.contains('\n'), "{line}: {error}");
        }
        let (id, _) = parse(r#"{"op":"fly","id":7}"#).unwrap_err();
        assert_eq!(id, Some(json!(7)));
    }

    #[test]
    fn replies_echo_the_id_and_refusals_say_ok_false() {
        let id = Some(json!("a"));
        let ok: Value = serde_json::from_str(&reply(&id, json!({"at_ns": 5}))).unwrap();
        assert_eq!(ok, json!({"ok": true, "id": "a", "at_ns": 5}));
        let no: Value = serde_json::from_str(&refusal(&None, "why")).unwrap();
        assert_eq!(no, json!({"ok": false, "error": "why"}));
    }
}
