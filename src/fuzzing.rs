//! The entry points the fuzz targets drive (`fuzz/`, cargo-fuzz on nightly) and the bounded
//! stable pass that `cargo test` runs over mutated seeds (`tests/hostile.rs`): the same two
//! functions, so what the fuzzer explores is what CI checks. Pure: bytes in, a summary out.

use crate::trace::TraceReader;
use crate::trace::reader::{EXPANSION, EXPANSION_FLOOR, MAX_EVENT_STRINGS};

/// What reading a trace gave.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TraceSummary {
    pub events: usize,
    /// Bytes of strings (paths, argv, names...) the events carried, in all.
    pub string_bytes: u64,
    /// The most any one event carried.
    pub max_event_bytes: u64,
    /// The one-line error that ended the read, if any.
    pub error: Option<String>,
    pub truncated: bool,
}

/// Read a whole trace as `sbx show` does; never panics. The string bytes the events carry
/// stay within [`trace_budget`] whatever the input.
pub fn read_trace(bytes: &[u8]) -> TraceSummary {
    let mut out = TraceSummary::default();
    let mut r = match TraceReader::new(bytes) {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    for ev in r.by_ref() {
        match ev {
            Ok(ev) => {
                let n = event_string_bytes(&ev);
                out.events += 1;
                out.string_bytes += n;
                out.max_event_bytes = out.max_event_bytes.max(n);
            }
            Err(e) => out.error = Some(e.to_string()),
        }
    }
    out.truncated = r.truncated().is_some();
    out
}

/// The most string bytes a trace of `len` bytes may expand to (the reader's bounds).
pub fn trace_budget(len: usize) -> (u64, u64) {
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    (
        MAX_EVENT_STRINGS,
        EXPANSION_FLOOR.saturating_add(len.saturating_mul(EXPANSION)),
    )
}

/// Bytes of strings an event carries.
fn event_string_bytes(ev: &crate::event::Event) -> u64 {
    use crate::event::{EventKind, Object, SockAddr};
    let len = |b: &[u8]| b.len() as u64;
    let mut n = len(&ev.proc.comm) + len(&ev.proc.exe);
    match &ev.kind {
        EventKind::Syscall(sc) => {
            n += sc.name.len() as u64;
            for t in &sc.targets {
                n += match &t.object {
                    Object::Path(p) => {
                        len(&p.literal) + len(&p.abs) + p.resolved.as_deref().map_or(0, len)
                    }
                    Object::Fd { path, .. } => path.as_deref().map_or(0, len),
                    Object::Anon(b) | Object::Text(b) => len(b),
                    Object::DnsName(s) => s.len() as u64,
                    Object::Socket(SockAddr::Unix(b) | SockAddr::UnixAbstract(b)) => len(b),
                    Object::Socket(SockAddr::Other { bytes, .. }) => len(bytes),
                    Object::Socket(_) | Object::Ids(_) => 0,
                };
            }
        }
        EventKind::Exec(x) => {
            n += len(&x.path) + x.program.as_deref().map_or(0, len);
            for v in [&x.argv, &x.env_names, &x.thinned] {
                n += v.iter().map(|b| len(b)).sum::<u64>();
            }
        }
        EventKind::Resolved(r) => n += r.name.len() as u64,
        EventKind::Spawn(_) | EventKind::Exit(_) => {}
    }
    n
}

/// Parse, resolve and compile a profile as `sbx enforce` does, and render what parsed;
/// never panics. Returns the number of rules, or the first error's text.
pub fn parse_profile(bytes: &[u8]) -> Result<usize, String> {
    let text = String::from_utf8_lossy(bytes);
    let profile = crate::profile::parse::parse_str("fuzz.profile", &text).map_err(|e| {
        let shown = e.render_with_source(&text);
        e.0.first().map(ToString::to_string).unwrap_or(shown)
    })?;
    let _ = crate::profile::render::render(&profile);
    let env = crate::profile::vars::Env {
        cwd: "/home/u/app".into(),
        home: "/home/u".into(),
        tmpdir: "/tmp".into(),
        vars: std::collections::BTreeMap::new(),
    };
    crate::policy::CompiledPolicy::load("fuzz.profile", &text, &env)
        .map(|_| profile.rules.len())
        .map_err(|e| e.to_string())
}
