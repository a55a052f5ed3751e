//! Hostile traces, written byte by byte (docs/trace-format.md), for the tests that bound what
//! reading a trace may cost (issue 39 item 8) and for `benches/hostile.sh` (through
//! `examples/hostile_trace.rs`, which includes this file).
//!
//! Interning lets a record name a string by a one-byte id, so a small file can refer to a big
//! string many times: a reader that copies the string per reference turns a 1 MiB file into
//! gigabytes. These builders write such files; `execs` writes an honest trace of many distinct
//! programs (learn's exec rules).

// Synthetic sizes and ids: small counters, the casts lose nothing.
#![allow(
    dead_code,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

use sbx::arch::Arch;
use sbx::trace::{Header, TraceWriter};

/// Append an unsigned LEB128 varint (postcard's integer and length encoding).
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// Append a signed integer as postcard does: zigzag, then varint.
pub fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub fn header() -> Header {
    Header {
        sbx_version: "0.1.0".into(),
        arch: Arch::X86_64,
        kernel: "hostile".into(),
        argv: vec![b"npm".to_vec(), b"install".to_vec()],
        cwd: b"/home/u/app".to_vec(),
        home: b"/home/u".to_vec(),
        tmpdir: b"/tmp".to_vec(),
        uid: 1000,
        gid: 1000,
        user: "u".into(),
        start_unix: 0,
        metadata: false,
    }
}

/// A trace being built: magic, version and header, then raw frames.
pub struct Raw(pub Vec<u8>);

impl Raw {
    pub fn new() -> Raw {
        let w = TraceWriter::new(Vec::new(), &header()).expect("header");
        Raw(w.finish().expect("finish"))
    }

    pub fn frame(&mut self, body: &[u8]) {
        varint(&mut self.0, body.len() as u64);
        self.0.extend_from_slice(body);
    }

    /// `DefineString { id, bytes }`.
    pub fn define(&mut self, id: u32, bytes: &[u8]) {
        let mut b = vec![0];
        varint(&mut b, u64::from(id));
        varint(&mut b, bytes.len() as u64);
        b.extend_from_slice(bytes);
        self.frame(&b);
    }

    /// The start of an `Event` record: dt 1, pid 100, tid_off 0, process info on the first
    /// event only (ppid 0, comm and exe string `proc_id`, creds 1000).
    fn event_head(first: bool, proc_id: u32) -> Vec<u8> {
        let mut b = vec![2];
        zigzag(&mut b, 1);
        zigzag(&mut b, 100);
        zigzag(&mut b, 0);
        if first {
            b.push(1);
            zigzag(&mut b, 0);
            varint(&mut b, u64::from(proc_id));
            varint(&mut b, u64::from(proc_id));
            for _ in 0..4 {
                varint(&mut b, 1000);
            }
        } else {
            b.push(0);
        }
        b
    }

    /// An `ExecProgram` event whose path is `path_id` and whose argv is `argv_id` `n` times.
    pub fn exec_repeating(
        &mut self,
        first: bool,
        proc_id: u32,
        path_id: u32,
        argv_id: u32,
        n: u64,
    ) {
        let mut b = Self::event_head(first, proc_id);
        varint(&mut b, 5);
        varint(&mut b, u64::from(path_id));
        varint(&mut b, n);
        for _ in 0..n {
            varint(&mut b, u64::from(argv_id));
        }
        varint(&mut b, 0); // env_names
        b.push(0); // former_tid
        b.push(0); // program
        varint(&mut b, 0); // thinned
        self.frame(&b);
    }

    /// An `openat` event reading the path `path_id` (literal, abs and resolved all the same
    /// string) `targets` times.
    pub fn open_repeating(
        &mut self,
        first: bool,
        proc_id: u32,
        name_id: u32,
        path_id: u32,
        targets: u64,
    ) {
        let mut b = Self::event_head(first, proc_id);
        varint(&mut b, 0); // Syscall
        varint(&mut b, u64::from(name_id));
        varint(&mut b, 257);
        for _ in 0..6 {
            zigzag(&mut b, 0);
        }
        varint(&mut b, targets);
        for _ in 0..targets {
            varint(&mut b, 1); // access: read
            varint(&mut b, 0); // Path
            varint(&mut b, u64::from(path_id));
            varint(&mut b, u64::from(path_id));
            b.push(1);
            varint(&mut b, u64::from(path_id));
        }
        varint(&mut b, 0); // Value
        zigzag(&mut b, 3);
        b.push(0); // sock_type
        self.frame(&b);
    }
}

/// About `size` bytes: a `big`-byte path, then exec records whose argv names it `per` times
/// each (`per` one-byte ids), until the file is `size` long. Every record is well formed.
pub fn argv_bomb(size: usize, big: usize, per: u64) -> Vec<u8> {
    let mut r = Raw::new();
    r.define(0, b"x");
    let mut path = b"/home/u/app/".to_vec();
    path.resize(big, b'a');
    r.define(1, &path);
    let mut first = true;
    while r.0.len() + per as usize + 16 < size {
        r.exec_repeating(first, 0, 1, 1, per);
        first = false;
    }
    r.0
}

/// About `size` bytes: a `big`-byte path, then `openat` records with `targets` targets each
/// naming it three times (literal, abs, resolved).
pub fn path_bomb(size: usize, big: usize, targets: u64) -> Vec<u8> {
    let mut r = Raw::new();
    r.define(0, b"x");
    r.define(1, b"openat");
    let mut path = b"/home/u/app/".to_vec();
    path.resize(big, b'b');
    r.define(2, &path);
    let mut first = true;
    while r.0.len() + 6 * targets as usize + 24 < size {
        r.open_repeating(first, 0, 1, 2, targets);
        first = false;
    }
    r.0
}

/// About `size` bytes: a `big`-byte string, then one exec whose argv names it once per byte
/// left (at most 16 MiB of ids, the frame limit).
pub fn one_record_bomb(size: usize, big: usize) -> Vec<u8> {
    let mut r = Raw::new();
    r.define(0, b"x");
    let mut path = b"/home/u/app/".to_vec();
    path.resize(big, b'c');
    r.define(1, &path);
    let n = (size - r.0.len()).saturating_sub(32) as u64;
    r.exec_repeating(true, 0, 1, 1, n.min((16 << 20) - 32));
    r.0
}

/// An honest trace of `n` execs of distinct programs (`/opt/tool{i}/bin/run{i}`), each by its
/// own process: what a build that runs many tools looks like to learn's exec rules.
pub fn execs(n: usize) -> Vec<u8> {
    use sbx::event::{Creds, Event, EventKind, Exec, ProcInfo};
    let mut w = TraceWriter::new(Vec::new(), &header()).expect("header");
    for i in 0..n {
        let path = format!("/opt/tool{i}/bin/run{i}").into_bytes();
        let ev = Event {
            time_ns: i as u64,
            pid: 100 + i as i32,
            tid: 100 + i as i32,
            proc: ProcInfo {
                ppid: 1,
                comm: b"sh".as_slice().into(),
                exe: b"/bin/sh".as_slice().into(),
                creds: Creds {
                    uid: 1000,
                    euid: 1000,
                    gid: 1000,
                    egid: 1000,
                },
            },
            kind: EventKind::Exec(Exec {
                path: path.clone(),
                argv: vec![path, b"--flag".to_vec()],
                env_names: vec![b"PATH".to_vec()],
                former_tid: None,
                program: None,
                thinned: Vec::new(),
            }),
        };
        w.write(&ev).expect("write");
    }
    w.finish().expect("finish")
}
