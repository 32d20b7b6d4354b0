//! Prints docs/models.md: `cargo run -p vram_core --example models_md > docs/models.md`.
fn main() {
    print!("{}", vram_core::models_index::markdown());
}
