// Generates `$OUT_DIR/gen.rs`, as build scripts that generate bindings or tables do.
use std::{env, fs, path::Path};

fn main() {
    let out = env::var("OUT_DIR").unwrap();
    let target = env::var("TARGET").unwrap();
    fs::write(
        Path::new(&out).join("gen.rs"),
        format!("pub const GREETING: &str = \"hello from build.rs for {target}\";\n"),
    )
    .unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
