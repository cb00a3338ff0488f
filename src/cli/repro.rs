//! `blkcg-sim repro`: run the built-in seeds and print every band beside the
//! published numbers.

use crate::progress::Reporter;
use crate::report::outputs::summary_text;
use crate::run::{in_parallel, reproduce_with};
use crate::scenario::embedded;
use crate::scenario::repro::{self};

/// `blkcg-sim repro`: run the built-in seeds and check every band.
pub fn repro_command(names: &[String], json: bool, progress: &Reporter) -> Result<u8, String> {
    let all = embedded::seeds();
    let chosen: Vec<&str> = if names.is_empty() {
        all.clone()
    } else {
        let mut v = Vec::new();
        for n in names {
            let Some(x) = all.iter().find(|s| **s == n.as_str()) else {
                return Err(format!(
                    "no seed reproduction `{n}`; available: {}",
                    all.join(", ")
                ));
            };
            v.push(*x);
        }
        v
    };
    let mut failed = 0;
    let mut json_out = Vec::new();
    let reproductions = in_parallel(&chosen, |name| reproduce_with(name, progress))?;
    for (name, (spec, results, runs)) in chosen.into_iter().zip(reproductions) {
        failed += results.iter().filter(|r| !r.pass).count();
        if json {
            json_out.push(serde_json::json!({
                "name": name,
                "title": spec.title,
                "source": spec.source,
                "bands": results,
                "pass": results.iter().all(|r| r.pass),
            }));
        } else {
            println!("==== {name}: {}", spec.title);
            println!("source: shared/seeds/{}\n", spec.source);
            println!("published:\n{}", spec.published.trim_end());
            println!("\nsimulated:");
            for run in &runs {
                println!("--- {} ---", run.label);
                print!("{}", summary_text(run));
            }
            println!();
            print!("{}", repro::bands_table(&results));
            println!();
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json_out).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{}",
            if failed == 0 {
                "all bands pass".to_string()
            } else {
                format!("{failed} band(s) FAIL")
            }
        );
    }
    Ok(u8::from(failed > 0))
}
