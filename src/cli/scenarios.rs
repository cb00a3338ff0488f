//! `blkcg-sim scenarios`: the built-in scenarios, each with the first line of its
//! description, or one of them printed whole.

use crate::scenario::{Scenario, embedded};

/// List every built-in scenario, or print scenario `name`.
pub fn scenarios_command(name: Option<&str>) -> Result<u8, String> {
    let Some(n) = name else {
        for n in embedded::names() {
            let sc = embedded::get(n).and_then(|t| Scenario::parse(t, n).ok());
            let about = sc
                .and_then(|s| {
                    s.table
                        .get("description")
                        .and_then(|d| d.as_str())
                        .map(|d| d.lines().next().unwrap_or("").to_string())
                })
                .unwrap_or_default();
            println!("{n:<32} {about}");
        }
        return Ok(0);
    };
    match embedded::get(n) {
        Some(t) => {
            print!("{t}");
            Ok(0)
        }
        None => Err(format!(
            "no built-in scenario `{n}`; built in: {}",
            embedded::names().join(", ")
        )),
    }
}
