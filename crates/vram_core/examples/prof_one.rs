fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let p = vram_core::presets::PRESETS
        .iter()
        .find(|p| p.id == std::env::var("P").as_deref().unwrap_or("Qwen__Qwen3-8B"))
        .unwrap();
    let spec = vram_core::parse_config(p.json, None).unwrap();
    let o = vram_core::report::DeviceOverheads::default();
    for _ in 0..200 {
        match which.as_str() {
            "parse" => {
                std::hint::black_box(vram_core::parse_config(p.json, None).ok());
            }
            "infer" => {
                std::hint::black_box(
                    vram_core::infer::inference_totals(
                        &spec,
                        &vram_core::Scenario::inference(),
                        &o,
                    )
                    .ok(),
                );
            }
            _ => {
                std::hint::black_box(
                    vram_core::train::estimate_training(&spec, &vram_core::Scenario::default(), &o)
                        .ok(),
                );
            }
        }
    }
}
