//! Embed the git revision in `sbx --version` (falls back to "unknown" outside a git checkout).

fn main() {
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    // Built from sources that differ from that commit: say so (`-dirty`).
    let dirty = rev != "unknown"
        && std::process::Command::new("git")
            .args([
                "diff",
                "--quiet",
                "HEAD",
                "--",
                "src",
                "Cargo.toml",
                "Cargo.lock",
                "build.rs",
            ])
            .status()
            .is_ok_and(|s| s.code() == Some(1));
    let rev = if dirty { format!("{rev}-dirty") } else { rev };
    println!("cargo:rustc-env=SBX_GIT_REV={rev}");
    for p in ["src", "Cargo.toml", "Cargo.lock", "build.rs", ".git/index"] {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
}
