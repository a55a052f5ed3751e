//! Write the hostile traces of `tests/util/hostile.rs` for `benches/hostile.sh` (issue 39
//! item 8): traces whose interned strings are named far more often than they are stored, and
//! an honest trace of many distinct execs.
//!
//!     cargo run --release --example hostile_trace -- argv|path|one|execs OUT [SIZE|N]

#[path = "../tests/util/hostile.rs"]
mod hostile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, out) = match (args.first(), args.get(1)) {
        (Some(k), Some(o)) => (k.as_str(), o),
        _ => return Err("usage: hostile_trace argv|path|one|execs OUT [SIZE|N]".into()),
    };
    let n: usize = args
        .get(2)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 20);
    let bytes = match kind {
        "argv" => hostile::argv_bomb(n, 64 << 10, 200),
        "path" => hostile::path_bomb(n, 4000, 50),
        "one" => hostile::one_record_bomb(n, (n / 4).min(1 << 20)),
        "execs" => hostile::execs(n),
        _ => return Err(format!("unknown kind {kind}").into()),
    };
    std::fs::write(out, bytes)?;
    Ok(())
}
