//! Entry point of the web app: mounts the Leptos app on the page.

fn main() {
    vram_web::start();
}
