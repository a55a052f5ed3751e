//! Hostile input (issue 39 item 8): traces crafted to expand, read by `show`, `stats` and
//! `learn` within a memory bound; names with terminal control bytes printed escaped.
//!
//! Memory is bounded by running sbx under `prlimit --data` (brk and private mappings: the
//! heap): a reader that copies an interned string per reference runs out and aborts, a
//! bounded one refuses the trace with a one-line error (exit 125) well inside the limit.
//! The traces are written byte by byte by `util::hostile` (also `benches/hostile.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::hostile;
use crate::util::{Dir, Output, assert_no_panic, run_guarded, sbx_bin};

/// The bound the issue asks for: 64 times the trace's size plus 64 MiB.
fn bound(trace: &Path) -> u64 {
    64 * std::fs::metadata(trace).unwrap().len() + (64 << 20)
}

fn limited(trace: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("prlimit");
    c.arg(format!("--data={}", bound(trace)))
        .arg("--")
        .arg(sbx_bin())
        .args(args);
    run_guarded(c, Duration::from_secs(120))
}

/// Exit 125, one stderr line naming the file and the byte where the trouble is.
fn assert_refused(out: &Output, file: &Path, what: &str) {
    assert_no_panic(out);
    assert_eq!(
        out.code,
        Some(125),
        "{what}: killed or aborted ({:?}) under a {} MiB data limit?\n{}",
        out.signal,
        bound(file) >> 20,
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(
        out.stderr
            .starts_with(&format!("sbx: error: {}: byte ", file.display()))
            && out.stderr.contains(name)
            && out.stderr.contains("(a hostile trace?)"),
        "{what}: {}",
        out.stderr
    );
}

#[test]
fn hostile_traces_are_read_in_memory_proportional_to_their_size() {
    let d = Dir::new();
    let mib = 1 << 20;
    let traces: Vec<(&str, PathBuf)> = vec![
        // One exec whose argv names a 256 KiB string 770,000 times: 190 GiB copied per
        // reference.
        ("one", d.join("one.trace")),
        // Execs naming a 64 KiB string 200 times each, 12.5 MiB per event, 5,000 events.
        ("argv", d.join("argv.trace")),
        // Opens of a 4,000-byte path with 50 targets (150 references) each.
        ("path", d.join("path.trace")),
    ];
    for (kind, path) in &traces {
        let bytes = match *kind {
            "one" => hostile::one_record_bomb(mib, 256 << 10),
            "argv" => hostile::argv_bomb(mib, 64 << 10, 200),
            _ => hostile::path_bomb(mib, 4000, 50),
        };
        assert!(bytes.len() <= mib && bytes.len() > mib - 4096, "{kind}");
        std::fs::write(path, bytes).unwrap();
    }
    let profile = d.join("p.profile");
    for (kind, path) in &traces {
        let p = path.to_str().unwrap();
        let out = limited(path, &["stats", p]);
        assert_refused(&out, path, &format!("stats {kind}"));
        let out = limited(path, &["learn", p, "-o", profile.to_str().unwrap()]);
        assert_refused(&out, path, &format!("learn {kind}"));
        assert!(
            !profile.exists(),
            "learn wrote a profile from a refused trace"
        );
        // Shown through a filter that matches nothing: reading is what is measured (a debug
        // build formats the 256 MiB that are shown before the refusal in about a minute).
        let out = limited(path, &["show", "--pid", "7", p]);
        assert_refused(&out, path, &format!("show {kind}"));
    }
}

/// An honest trace far below the bounds reads as before, and `show` prints every event.
#[test]
fn many_distinct_execs_read_and_learn() {
    let d = Dir::new();
    let path = d.join("execs.trace");
    std::fs::write(&path, hostile::execs(300)).unwrap();
    let p = path.to_str().unwrap();
    let out = limited(&path, &["show", p]);
    out.assert_code(0);
    assert_eq!(out.stdout.lines().count(), 300);
    let profile = d.join("p.profile");
    let out = limited(&path, &["learn", p, "-o", profile.to_str().unwrap()]);
    out.assert_code(0);
    let text = std::fs::read_to_string(&profile).unwrap();
    for i in [0, 150, 299] {
        assert!(
            text.contains(&format!("exec /opt/tool{i}/bin/run{i}\n")),
            "{text}"
        );
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `unshare` flags for a private network and mount namespace (as `tests/net.rs`).
fn unshare_flags() -> &'static [&'static str] {
    if nix::unistd::geteuid().is_root() {
        &["-n", "-m"]
    } else {
        &["-r", "-n", "-m"]
    }
}

/// Run `cmd` in a fresh private network whose DNS server (`dns_server.py`) serves
/// `registry.test`; returns the output and the DNS server's query log.
fn in_private_network(d: &Dir, name: &str, cmd: &[&str]) -> (Output, String) {
    let dir = d.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let zone = dir.join("zone");
    std::fs::write(&zone, "registry.test 10.77.0.2\n").unwrap();
    let mut c = Command::new("unshare");
    c.args(unshare_flags())
        .args(["--", "sh"])
        .arg(fixtures().join("netns.sh"))
        .arg(&dir)
        .arg(&zone)
        .args(cmd)
        .current_dir(d.path());
    let out = run_guarded(c, Duration::from_secs(90));
    assert_ne!(out.code, Some(99), "no private network: {}", out.stderr);
    let log = std::fs::read_to_string(dir.join("dns.log")).unwrap_or_default();
    (out, log)
}

/// A DNS query name carrying CR, an OSC title sequence ended by BEL and an erase-line CSI:
/// printed raw, it rewrites the terminal line or the CI log it lands in.
const HOSTILE_NAME: &str = "ok\r\u{1b}]0;owned\u{7}\u{1b}[2Kx.attacker.test";

#[test]
fn hostile_dns_name_in_a_violation_line_is_escaped() {
    let possible = Command::new("unshare")
        .args(unshare_flags())
        .args(["--", "ip", "link", "set", "lo", "up"])
        .status()
        .is_ok_and(|s| s.success());
    if !possible {
        eprintln!("SKIPPED hostile_dns_name_in_a_violation_line_is_escaped: no private network");
        return;
    }
    let d = Dir::new();
    let fetch = fixtures().join("fetch.py");
    let fetch = fetch.to_str().unwrap();
    let hostile = format!("rawdns:{HOSTILE_NAME}");
    // Without sbx the query, control bytes and all, reaches the name server.
    let (_, log) = in_private_network(&d, "bare", &["python3", fetch, &hostile]);
    assert!(log.contains("\u{1b}]0;owned\u{7}"), "bare: {log:?}");

    let sbx = sbx_bin();
    let trace = d.join("trace.bin");
    let profile = d.join("p.profile");
    let (trace, profile) = (trace.to_str().unwrap(), profile.to_str().unwrap());
    let (out, _) = in_private_network(
        &d,
        "record",
        &[
            sbx,
            "record",
            "-o",
            trace,
            "--",
            "python3",
            fetch,
            "rawdns:registry.test",
        ],
    );
    out.assert_code(0);
    let (out, _) = in_private_network(&d, "learn", &[sbx, "learn", trace, "-o", profile]);
    out.assert_code(0);
    for mode in ["kill", "deny"] {
        let (out, log) = in_private_network(
            &d,
            mode,
            &[
                sbx, "enforce", "--mode", mode, profile, "--", "python3", fetch, &hostile,
            ],
        );
        assert_eq!(out.code, Some(124), "{mode}: {}", out.stderr);
        assert!(
            !log.contains("owned"),
            "{mode}: the query was sent: {log:?}"
        );
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("sbx: violation:") && l.contains(" resolve "))
            .unwrap_or_else(|| panic!("{mode}: no resolve violation:\n{:?}", out.stderr));
        assert!(
            line.contains("ok\\r\\x1b]0;owned\\x07\\x1b[2kx.attacker.test"),
            "{mode}: {line:?}"
        );
        let raw: Vec<char> = out
            .stderr
            .chars()
            .filter(|&c| c != '\n' && sbx::show::is_unsafe_char(c))
            .collect();
        assert!(
            raw.is_empty(),
            "{mode}: raw control characters {raw:?} in\n{:?}",
            out.stderr
        );
    }
}

/// Deterministic xorshift, so a failing input can be rebuilt from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n.max(1)).unwrap_or(1)).unwrap_or(0)
    }
}

/// One mutation of `seed`, of the kinds that reach deep into a length-prefixed format:
/// byte flips, big varints (`ff ff ff 7f`), cut, duplicated and spliced ranges.
fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len());
        match rng.below(6) {
            0 if !b.is_empty() => b[at] ^= 1 << rng.below(8),
            1 if !b.is_empty() => b[at] = rng.next().to_le_bytes()[0],
            2 => {
                let big: &[u8] = [&[0xff, 0xff, 0xff, 0x7f][..], &[0x80; 9], &[0]][rng.below(3)];
                b.splice(at..at, big.iter().copied());
            }
            3 => b.truncate(at),
            4 => {
                let end = (at + 1 + rng.below(64)).min(b.len());
                let chunk = b[at..end].to_vec();
                let to = rng.below(b.len());
                b.splice(to..to, chunk);
            }
            _ => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(256)).min(other.len());
                let to = rng.below(b.len());
                b.splice(to..to, other[from..end].iter().copied());
            }
        }
    }
    b
}

/// The stable fuzz pass CI runs (`fuzz/` has the cargo-fuzz targets for nightly): a few
/// thousand mutations (2,000 traces, 800 profiles) of real traces and profiles through the same entry points
/// (`sbx::fuzzing`), no panic, and what a trace expands to stays within the reader's bounds.
#[test]
fn fuzz_trace_and_profile_readers_bounded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut traces: Vec<Vec<u8>> = ["small.bin", "small-v5.bin", "truncated.bin"]
        .iter()
        .map(|n| std::fs::read(root.join("tests/data/traces").join(n)).unwrap())
        .collect();
    traces.push(hostile::execs(40));
    traces.push(hostile::argv_bomb(4096, 300, 40));
    traces.push(hostile::path_bomb(4096, 200, 3));
    let mut profiles: Vec<Vec<u8>> = std::fs::read_dir(root.join("profiles"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    profiles.sort();
    assert!(profiles.len() >= 5 && traces.iter().all(|t| t.len() > 12));
    for t in &traces {
        let s = sbx::fuzzing::read_trace(t);
        assert!(s.events > 0, "a seed reads: {s:?}");
    }
    let mut rng = Rng(0x5eed_f00d_cafe_0001);
    let (mut refused, mut read) = (0, 0);
    for i in 0..2000 {
        let seed = &traces[i % traces.len()];
        let other = &traces[rng.below(traces.len())];
        let input = mutate(&mut rng, seed, other);
        let s = sbx::fuzzing::read_trace(&input);
        let (per_event, total) = sbx::fuzzing::trace_budget(input.len());
        assert!(
            s.max_event_bytes <= per_event && s.string_bytes <= total,
            "input {i}: {s:?}"
        );
        if let Some(e) = &s.error {
            assert!(
                !e.contains('\n') && e.starts_with("byte "),
                "input {i}: {e}"
            );
            refused += 1;
        } else {
            read += 1;
        }
    }
    let (mut ok, mut bad) = (0, 0);
    for i in 0..800 {
        let seed = &profiles[i % profiles.len()];
        let other = &profiles[rng.below(profiles.len())];
        match sbx::fuzzing::parse_profile(&mutate(&mut rng, seed, other)) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.is_empty(), "input {i}");
                bad += 1;
            }
        }
    }
    eprintln!("fuzz: traces {read} read, {refused} refused; profiles {ok} ok, {bad} refused");
    // The mutations reach both sides of each reader.
    assert!(read > 100 && refused > 100, "{read} {refused}");
    assert!(ok > 100 && bad > 100, "{ok} {bad}");
}
