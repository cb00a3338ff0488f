//! Scenario values given on a command line: `--device MODEL[:key=value,...]` as a
//! `[device]` table ([`parse_device_spec`]) and a typed value as a scenario would write
//! it ([`typed_value`]).

/// `--device SPEC` of `blkcg-sim fio`: `MODEL[:key=value,key=value...]` as a `[device]`
/// table. Values that read as integers, floats or booleans become those.
pub fn parse_device_spec(spec: &str) -> Result<toml::Table, String> {
    let (model, rest) = match spec.split_once(':') {
        Some((m, r)) => (m, r),
        None => (spec, ""),
    };
    if model.is_empty() {
        return Err(format!(
            "--device `{spec}`: give a model (nullb, ssd, hdd, cloud), e.g. nullb:irqmode=2,completion_nsec=100000"
        ));
    }
    let mut t = toml::Table::new();
    t.insert("model".into(), toml::Value::String(model.to_string()));
    // modprobe keeps the last of a null_blk parameter given twice (so the command
    // line overrides /etc/modprobe.d); one SPEC has no such layers: a key given twice
    // is a slip, refused naming both as written
    let mut given = vec![("model", format!("`{model}` before the `:`"))];
    for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("--device `{spec}`: `{kv}` is not key=value"));
        };
        let (k, v) = (k.trim(), v.trim());
        if let Some((_, first)) = given.iter().find(|(g, _)| *g == k) {
            return Err(format!(
                "--device `{spec}`: `{k}` is given twice ({first}, {k}={v}); give each key once"
            ));
        }
        given.push((k, format!("{k}={v}")));
        t.insert(k.to_string(), typed_value(v));
    }
    Ok(t)
}

/// A value given on the command line as a scenario would write it: an integer, a
/// float or a boolean when it reads as one, else a string.
pub fn typed_value(v: &str) -> toml::Value {
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = v.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = v.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_specs() {
        let t = parse_device_spec("nullb:irqmode=2,completion_nsec=100000,preset=x").unwrap();
        assert_eq!(t["model"].as_str(), Some("nullb"));
        assert_eq!(t["irqmode"].as_integer(), Some(2));
        assert_eq!(t["preset"].as_str(), Some("x"));
        assert_eq!(parse_device_spec("ssd").unwrap().len(), 1);
        assert!(parse_device_spec("nullb:irqmode").is_err());
        assert!(parse_device_spec(":x=1").is_err());
    }

    /// Issue 32 item 14: a key given twice is refused, naming both as written.
    #[test]
    fn a_key_given_twice_names_both_as_written() {
        let e = parse_device_spec("nullb:name=a,name=b").unwrap_err();
        assert!(
            e.ends_with("`name` is given twice (name=a, name=b); give each key once"),
            "{e}"
        );
        let e = parse_device_spec("nullb:model=ssd").unwrap_err();
        assert!(
            e.contains("`model` is given twice (`nullb` before the `:`, model=ssd)"),
            "{e}"
        );
    }
}
