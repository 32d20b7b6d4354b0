//! docs/models.md is generated from the code; this fails when it is out of date (regenerate with
//! `cargo run -p vram_core --example models_md > docs/models.md`).

#[test]
fn docs_models_md_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/models.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == vram_core::models_index::markdown(),
        "docs/models.md is out of date: run `cargo run -p vram_core --example models_md > docs/models.md`"
    );
}
