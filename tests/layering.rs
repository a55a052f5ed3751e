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

/// Files that hold only a test module: declared as `#[cfg(test)] mod NAME;` by a sibling
/// (`mod.rs`, `lib.rs`) or by their parent module file.
fn test_only_files(files: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let dir = match f.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => f.parent().unwrap().to_path_buf(),
            _ => f.with_extension(""),
        };
        for w in lines.windows(2) {
            let name = w[1].strip_prefix("mod ").and_then(|r| r.strip_suffix(';'));
            if let (true, Some(name)) = (w[0] == "#[cfg(test)]", name) {
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

#[test]
fn test_only_files_are_found_by_their_declaration() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let tests = test_only_files(&files);
    assert!(
        tests.contains(&root.join("learn/temp_tests.rs")),
        "{tests:?}"
    );
    assert!(
        !tests.contains(&root.join("learn/tempnames.rs")),
        "{tests:?}"
    );
}

#[test]
fn unsafe_and_syscalls_stay_in_the_tracer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let tests = test_only_files(&files);
    files.retain(|f| !tests.contains(f));
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
