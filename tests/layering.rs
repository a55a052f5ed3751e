//! A cheap mechanical check of the layering (docs/architecture.md): `unsafe`, `nix::` and
//! `libc::` calls live in `src/tracer/` only (plus `#[cfg(test)]` code and the arch tables'
//! test cross-checks); the pure core never touches ptrace or /proc.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The part of a file before its `#[cfg(test)]` module (tests may use libc and unsafe).
fn non_test_code(text: &str) -> &str {
    match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    }
}

#[test]
fn unsafe_and_syscalls_stay_in_the_tracer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // L1 (tracer) may; L2/L3 (sink, cli, main) may use nix for identity and signals but
        // not unsafe.
        if rel.starts_with("tracer/") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let code = non_test_code(&text);
        let glue = rel.starts_with("cli/") || rel.starts_with("sink/") || rel == "main.rs";
        for (n, line) in code.lines().enumerate() {
            let l = line.trim_start();
            if l.starts_with("//") {
                continue;
            }
            if l.contains("unsafe ") || l.contains("unsafe{") {
                bad.push(format!("{rel}:{}: unsafe outside src/tracer: {l}", n + 1));
            }
            if !glue && (l.contains("nix::") || l.contains("libc::")) {
                bad.push(format!(
                    "{rel}:{}: syscall crate in the pure core: {l}",
                    n + 1
                ));
            }
        }
    }
    assert!(bad.is_empty(), "layering violations:\n{}", bad.join("\n"));
}
