//! Compares the estimator's tensor inventory for a config with a fixture written by
//! `scripts/arch-header.py` (what `transformers` builds from the same config), for work on a new
//! architecture before its preset and fixture are added:
//!
//!     cargo run -p vram_core --example compare_header -- CONFIG.json FIXTURE.json

use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, fixture] = args.as_slice() else {
        eprintln!("usage: compare_header CONFIG.json FIXTURE.json");
        std::process::exit(2);
    };
    let spec = match vram_core::parse_config(&std::fs::read_to_string(config)?, None) {
        Ok(s) => s,
        Err(e) => {
            println!("does not parse: {e}");
            std::process::exit(1);
        }
    };
    let fx: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture)?)?;
    let bad = || format!("{fixture}: not a fixture of scripts/arch-header.py");
    let mut theirs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for t in fx["tensors"].as_array().ok_or_else(bad)? {
        let name = t[0].as_str().ok_or_else(bad)?;
        let shape = t[1]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|d| d.as_u64().ok_or_else(bad))
            .collect::<Result<Vec<u64>, String>>()?;
        theirs.insert(name.to_string(), shape);
    }
    let ours: BTreeMap<String, Vec<u64>> = spec
        .instances()
        .map(|i| (i.name().into_owned(), i.tensor.shape.to_vec()))
        .collect();
    let total = vram_core::ParamCounts::of(&spec).total;
    let want =
        fx["parameters"].as_u64().ok_or_else(bad)? + fx["buffer_elements"].as_u64().unwrap_or(0);
    println!(
        "first warning {:?}; ours {total} vs transformers {want} ({:+})",
        spec.warnings.first(),
        total as i128 - want as i128
    );
    for (n, s) in theirs
        .iter()
        .filter(|(n, s)| ours.get(*n) != Some(*s))
        .take(25)
    {
        println!("  transformers {n} {s:?}, ours {:?}", ours.get(n));
    }
    for n in ours.keys().filter(|n| !theirs.contains_key(*n)).take(25) {
        println!("  only ours {n} {:?}", ours[n]);
    }
    Ok(())
}
