//! Write a synthetic trace of N events (default 1,000,000) with the library's pure API, for the
//! learn benchmark (benches/learn.sh): an npm-like mix of node_modules reads, ENOENT probes,
//! writes, temp files with random names, /proc/<pid> reads, execs and process lifecycles.
//!
//!     cargo run --release --example synth_trace -- /tmp/synth.trace 1000000

use std::fs::File;
use std::io::BufWriter;

use sbx::arch::Arch;
use sbx::event::{
    Access, AccessSet, Creds, Event, EventKind, Exec, Exit, ExitStatus, Object, Outcome, PathObj,
    ProcInfo, Spawn, SpawnVia, Syscall, Target,
};
use sbx::trace::{Header, TraceWriter};

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn open(path: String, access: AccessSet, outcome: Outcome) -> EventKind {
    let p = path.into_bytes();
    EventKind::Syscall(Syscall {
        name: "openat".into(),
        nr: 257,
        args: [u64::MAX - 99, 0x7fff_0000, 0o2000000, 0, 0, 0],
        targets: vec![Target {
            access,
            object: Object::Path(PathObj {
                literal: p.clone(),
                abs: p,
                resolved: None,
            }),
        }],
        outcome,
        sock_type: None,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "synth.trace".into());
    let n: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let header = Header {
        sbx_version: env!("CARGO_PKG_VERSION").into(),
        arch: Arch::X86_64,
        kernel: "synthetic".into(),
        argv: vec![b"npm".to_vec(), b"install".to_vec()],
        cwd: b"/home/u/project".to_vec(),
        home: b"/home/u".to_vec(),
        tmpdir: b"/tmp".to_vec(),
        uid: 1000,
        gid: 1000,
        user: "u".into(),
        start_unix: 0,
        metadata: false,
    };
    let mut w = TraceWriter::new(BufWriter::new(File::create(&out)?), &header)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let creds = Creds {
        uid: 1000,
        euid: 1000,
        gid: 1000,
        egid: 1000,
    };
    let mut pid = 4000;
    let read = AccessSet::of(Access::Read);
    let write = AccessSet::of(Access::Write)
        .with(Access::Create)
        .with(Access::Truncate);
    for i in 0..n {
        // A new process every 1000 events.
        if i % 1000 == 0 {
            pid += 1;
        }
        let proc = ProcInfo {
            ppid: 4000,
            comm: b"node".as_slice().into(),
            exe: b"/usr/bin/node".as_slice().into(),
            creds,
        };
        let r = rng.next();
        let pkg = r % 3000; // 3000 packages
        let file = (r >> 12) % 20;
        let kind = match r % 100 {
            0..=59 => open(
                format!("/home/u/project/node_modules/pkg{pkg}/lib/f{file}.js"),
                read,
                Outcome::Value(3),
            ),
            60..=79 => open(
                format!(
                    "/home/u/project/node_modules/pkg{pkg}/node_modules/dep{file}/package.json"
                ),
                read,
                Outcome::Errno(2),
            ),
            80..=89 => open(
                format!(
                    "/home/u/.npm/_cacache/content-v2/sha512/{:02x}/{:016x}",
                    r >> 56,
                    r >> 8
                ),
                write,
                Outcome::Value(4),
            ),
            90..=94 => open(
                format!("/tmp/npm-{}-{:08x}/x", pid, r >> 32),
                write,
                Outcome::Value(5),
            ),
            95..=96 => open(format!("/proc/{pid}/stat"), read, Outcome::Value(6)),
            97 => EventKind::Spawn(Spawn {
                child: pid + 1,
                thread: false,
                via: SpawnVia::Clone,
            }),
            98 => EventKind::Exec(Exec {
                path: b"/bin/sh".to_vec(),
                argv: vec![b"sh".to_vec(), b"-c".to_vec(), b"node build.js".to_vec()],
                env_names: vec![b"PATH".to_vec(), b"HOME".to_vec()],
                former_tid: None,
                program: None,
                thinned: Vec::new(),
            }),
            _ => EventKind::Exit(Exit {
                status: ExitStatus::Code(0),
                process: true,
            }),
        };
        w.write(&Event {
            time_ns: i * 1000,
            pid,
            tid: pid,
            proc,
            kind,
        })?;
    }
    let written = w.events_written();
    let bytes = w.bytes_written();
    w.finish()?;
    eprintln!(
        "{out}: {written} events, {bytes} bytes ({:.1} bytes/event)",
        bytes as f64 / written as f64
    );
    Ok(())
}
