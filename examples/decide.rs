//! Ask a profile about paths, with the library's pure API only (no tracing):
//!
//!     cargo run --example decide -- npm.profile read /home/u/.ssh/id_rsa
//!
//! Prints `allow`, `allow if absent` (a probe rule) or `deny: REASON`.

use sbx::event::{Access, AccessSet, Object, PathObj};
use sbx::policy::{CompiledPolicy, Decision};
use sbx::profile::vars::Env;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [profile, verb, paths @ ..] = args.as_slice() else {
        return Err("usage: decide PROFILE read|write|create|delete|exec|stat PATH...".into());
    };
    let access = match verb.as_str() {
        "read" => Access::Read,
        "write" => Access::Write,
        "delete" => Access::Delete,
        "exec" => Access::Exec,
        "stat" => Access::Stat,
        "create" => Access::Create,
        v => return Err(format!("unknown verb {v:?}").into()),
    };
    let env = Env {
        cwd: std::env::current_dir()?.to_string_lossy().into_owned(),
        home: std::env::var("HOME").unwrap_or_default(),
        tmpdir: std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".into()),
        vars: std::env::vars().collect(),
    };
    let text = std::fs::read_to_string(profile)?;
    let policy = CompiledPolicy::load(profile, &text, &env)?;
    for p in paths {
        let obj = Object::Path(PathObj {
            literal: p.clone().into_bytes(),
            abs: p.clone().into_bytes(),
            resolved: None,
        });
        match policy.decide(AccessSet::of(access), &obj) {
            Decision::Allow => println!("{p}: allow"),
            Decision::AllowIfAbsent => println!("{p}: allow if absent"),
            Decision::Deny { verb, reason } => println!("{p}: deny {}: {reason:?}", verb.name()),
        }
    }
    Ok(())
}
