//! Compares the estimator's tensor inventory for a config with a fixture written by
//! `scripts/arch-header.py` (what `transformers` builds from the same config), for work on a new
//! architecture before its preset and fixture are added:
//!
//!     cargo run -p vram_core --example compare_header -- CONFIG.json FIXTURE.json

use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, fixture] = args.as_slice() else {
        eprintln!("usage: compare_header CONFIG.json FIXTURE.json");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(config).expect("config readable");
    let spec = match vram_core::parse_config(&text, None) {
        Ok(s) => s,
        Err(e) => {
            println!("does not parse: {e}");
            std::process::exit(1);
        }
    };
    let fx: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).expect("fixture readable"))
            .expect("fixture JSON");
    let theirs: BTreeMap<String, Vec<u64>> = fx["tensors"]
        .as_array()
        .expect("tensors")
        .iter()
        .map(|t| {
            let shape = t[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            (t[0].as_str().unwrap().to_string(), shape)
        })
        .collect();
    let ours: BTreeMap<String, Vec<u64>> = spec
        .instances()
        .map(|i| (i.name().into_owned(), i.tensor.shape.clone()))
        .collect();
    let total = vram_core::ParamCounts::of(&spec).total;
    let want = fx["parameters"].as_u64().unwrap() + fx["buffer_elements"].as_u64().unwrap_or(0);
    println!(
        "support {:?}; ours {total} vs transformers {want} ({:+})",
        spec.warnings.first(),
        total as i128 - want as i128
    );
    let mut shown = 0;
    for (n, s) in &theirs {
        if ours.get(n) != Some(s) && shown < 25 {
            println!("  transformers {n} {s:?}, ours {:?}", ours.get(n));
            shown += 1;
        }
    }
    for n in ours.keys().filter(|n| !theirs.contains_key(*n)).take(25) {
        println!("  only ours {n} {:?}", ours[n]);
    }
}
