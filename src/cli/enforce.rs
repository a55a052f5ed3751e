//! `sbx enforce`: load the profile (fail before the workload starts on any error), build the
//! enforce filter, run under the enforce sink, then print the violations' diff and write the
//! report.

use std::fs::File;
use std::io::BufWriter;

use anyhow::Context;

use super::{EnforceArgs, Mode, exit};
use crate::arch::Arch;
use crate::event::ExitStatus;
use crate::filter::{self, FilterMode, FilterSpec, GuardWindow, Refuse};
use crate::learn::{LearnOptions, Learner};
use crate::profile::parse::parse_str;
use crate::profile::render::render;
use crate::report::{Report, WorkloadStatus};
use crate::sink::enforce::{self as sink, EnforceSink};
use crate::sink::record::RecordSink;
use crate::trace::TraceWriter;
use crate::tracer::Tracer;
use crate::tracer::guard::WINDOW_BASE;

/// Linux 5.3 added PTRACE_GET_SYSCALL_INFO; pidfd_getfd (socket types) is 5.6.
const MIN_KERNEL: (u32, u32) = (5, 6);

fn check_kernel() -> anyhow::Result<()> {
    let u = nix::sys::utsname::uname().context("uname failed")?;
    let rel = u.release().to_string_lossy().into_owned();
    let mut it = rel
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u32>().unwrap_or(0));
    let v = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    anyhow::ensure!(
        v >= MIN_KERNEL,
        "unsupported kernel {rel}: sbx enforce needs Linux {}.{} or newer (PTRACE_GET_SYSCALL_INFO, pidfd_getfd)",
        MIN_KERNEL.0,
        MIN_KERNEL.1
    );
    Ok(())
}

/// What the report says beyond the violations: filled in as the run goes.
#[derive(Debug, Default)]
struct Outcome {
    profile: String,
    violations: Vec<crate::report::Violation>,
    diff: String,
    workload: Option<WorkloadStatus>,
    unused: Option<Vec<String>>,
    /// Why sbx stopped without a workload status (exit 125, 126, 127).
    error: Option<String>,
    /// The in-kernel layers in force.
    layers: Option<String>,
}

pub fn run(a: EnforceArgs) -> anyhow::Result<u8> {
    // A refused --gdb address is a usage error, before anything is created.
    if let Some(Err(e)) = a.gdb.as_deref().map(crate::tracer::gdb::parse_addr) {
        eprintln!("sbx: error: {e}");
        return Ok(exit::USAGE);
    }
    if a.gdb.is_some() && a.mode == Mode::Ask {
        eprintln!("sbx: error: --gdb and --mode ask cannot be combined (both hold threads)");
        return Ok(exit::USAGE);
    }
    // Where the report goes is checked before anything runs, and it is written whatever the
    // outcome: violations, the workload's status, or the error that stopped sbx.
    let out = a
        .report
        .as_deref()
        .map(|p| Output::create(p, &a))
        .transpose()?;
    let sarif_out = a
        .sarif
        .as_deref()
        .map(|p| Output::create(p, &a))
        .transpose()?;
    let mut o = Outcome {
        profile: a.profile.display().to_string(),
        ..Outcome::default()
    };
    let result = run_body(&a, &mut o);
    if out.is_some() || sarif_out.is_some() {
        let (code, error) = match &result {
            Ok(code) => (*code, o.error.take()),
            Err(e) => (exit::SBX_ERROR, Some(format!("{e:#}"))),
        };
        let r = Report {
            sbx_version: env!("CARGO_PKG_VERSION").into(),
            command: a
                .command
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect(),
            profile_in_repo: super::profile_in_repo(&a.profile).filter(|p| *p != o.profile),
            profile: o.profile,
            mode: format!("{:?}", a.mode).to_lowercase(),
            violations: o.violations,
            diff: if a.color == super::ColorChoice::Never {
                o.diff
            } else {
                // The report is for machines: no colour.
                anstream::adapter::strip_str(&o.diff).to_string()
            },
            workload: o.workload,
            exit_code: code,
            unused: o.unused,
            error,
            layers: o.layers,
        };
        if let Some(out) = out {
            out.write(&(serde_json::to_string_pretty(&r)? + "\n"))?;
        }
        if let Some(out) = sarif_out {
            out.write(&(serde_json::to_string_pretty(&crate::ci::sarif(&r))? + "\n"))?;
        }
    }
    result
}

/// Where a report goes. Under the fence sbx shares the workload's Landlock domain, where it
/// could not make or rename the file after the run: the file is then opened (made) before the
/// run and rewritten through the held fd (not atomically), else written through a temporary
/// file renamed into place.
enum Output {
    Replaced(super::learn::OutputFile),
    Held(std::path::PathBuf, File),
}

impl Output {
    fn create(p: &std::path::Path, a: &EnforceArgs) -> anyhow::Result<Output> {
        if a.mode == Mode::Audit || a.mode == Mode::Ask || a.no_fence {
            return Ok(Output::Replaced(super::learn::OutputFile::create(p)?));
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(p)
            .with_context(|| format!("cannot write {}", p.display()))?;
        Ok(Output::Held(p.to_path_buf(), f))
    }

    fn write(self, text: &str) -> anyhow::Result<()> {
        match self {
            Output::Replaced(o) => o.write(text),
            Output::Held(p, mut f) => {
                use std::io::Write;
                // Not a regular file (a pipe, a terminal): nothing to truncate.
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    f.set_len(0)
                        .with_context(|| format!("cannot write {}", p.display()))?;
                }
                f.write_all(text.as_bytes())
                    .and_then(|()| f.flush())
                    .with_context(|| format!("cannot write {}", p.display()))
            }
        }
    }
}

/// `sbx report`: a saved report rendered for CI.
pub fn run_report(a: super::ReportArgs) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(&a.report)
        .with_context(|| format!("cannot read {}", a.report.display()))?;
    let r: Report = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{}:{}:{}: not an sbx report: {e}",
            a.report.display(),
            e.line(),
            e.column()
        )
    })?;
    let out = match a.format {
        super::ReportFormat::Summary => crate::ci::github_summary(&r),
        super::ReportFormat::Annotations => r
            .violations
            .iter()
            .map(|v| v.github_annotation(r.profile_location()) + "\n")
            .collect(),
        super::ReportFormat::Sarif => serde_json::to_string_pretty(&crate::ci::sarif(&r))? + "\n",
        super::ReportFormat::Codequality => {
            serde_json::to_string_pretty(&crate::ci::code_quality(&r))? + "\n"
        }
    };
    match &a.output {
        Some(p) => super::learn::OutputFile::create(p)?.write(&out)?,
        None => std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())?,
    }
    Ok(exit::OK)
}

/// `SBX_TEST_NO_PTRACE_CHECKS=1`, honoured in debug builds only (a release binary cannot be
/// weakened through its environment): the enforce sink decides as in audit mode, so whatever
/// is refused was refused by the kernel layers (the fence, seccomp's in-kernel refusals).
fn no_ptrace_checks() -> bool {
    cfg!(debug_assertions)
        && std::env::var_os("SBX_TEST_NO_PTRACE_CHECKS").is_some_and(|v| v == "1")
}

/// Enter the Landlock domain (scopes and the fence) and say which layers are in force.
/// The fence's look at this machine's filesystem (symlinks followed).
struct FsLook;

impl crate::fence::Look for FsLook {
    fn kind(&self, p: &str) -> crate::fence::Kind {
        use crate::fence::Kind;
        match std::fs::metadata(p) {
            Err(_) => Kind::Absent,
            Ok(m) if m.is_dir() => Kind::Dir,
            Ok(m) if m.is_file() => Kind::File,
            Ok(_) => Kind::Special,
        }
    }
    fn list(&self, p: &str) -> Option<Vec<std::ffi::OsString>> {
        let entries = std::fs::read_dir(p).ok()?;
        entries.map(|e| e.ok().map(|e| e.file_name())).collect()
    }
}

/// `--require-fence` fails here (exit 125) when the fence is not in force in full.
fn enter_kernel_layers(
    a: &EnforceArgs,
    profile_name: &str,
    text: &str,
    env: &crate::profile::vars::Env,
    policy: &crate::policy::CompiledPolicy,
) -> anyhow::Result<(String, Option<crate::fence::Fence>)> {
    use crate::fence::right;
    // Ask mode widens the profile during the run: a fence set at the start would refuse
    // what the user then allows.
    let fence = if a.no_fence || a.mode == Mode::Ask {
        None
    } else {
        let profile = parse_str(profile_name, text).map_err(|e| anyhow::anyhow!("{e}"))?;
        let resolved = crate::profile::snippets::resolve(&profile, profile_name)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        // sbx shares the workload's domain (tracer::landlock): its /proc reads, and
        // /etc/hosts for the DNS names of a profile that names hosts.
        let mut extra = crate::fence::Extra::default();
        // It writes the workload's memory through /proc/PID/mem (the guard region, argument
        // copies, environment changes).
        extra.roots.push((
            "/proc".into(),
            right::READ_FILE | right::READ_DIR | right::WRITE_FILE,
        ));
        if policy.names_hosts() {
            extra.roots.push(("/etc/hosts".into(), right::READ_FILE));
        }
        // A tool store missing in HOME (`~/.npm` on a fresh runner) is made first, as the
        // tool would on first use: its rights then stay on it instead of moving up to HOME.
        for area in crate::fence::missing_store_areas(&resolved, env, &FsLook) {
            match std::fs::create_dir_all(&area) {
                Ok(()) if super::verbose() => {
                    eprintln!("sbx: fence: made the missing store {area} (its own root)");
                }
                Ok(()) => {}
                // Not made: its rights move up to its nearest existing ancestor, as before.
                Err(e) => eprintln!("sbx: warning: cannot make the missing store {area}: {e}"),
            }
        }
        Some(crate::fence::derive(&resolved, env, &extra, &FsLook))
    };
    let layer = crate::tracer::landlock::enter(&crate::tracer::landlock::Request {
        abstract_unix: !policy.allows_abstract_unix(),
        fence: fence.as_ref(),
        no_new_privs: !crate::tracer::caps::may_skip_no_new_privs(),
    });
    if super::verbose() {
        eprintln!("sbx: in-kernel layer: {layer}");
        if let Some(f) = &fence {
            for line in f.describe() {
                eprintln!("sbx: fence: {line}");
            }
        }
        if no_ptrace_checks() {
            eprintln!("sbx: warning: SBX_TEST_NO_PTRACE_CHECKS: the ptrace layer blocks nothing");
        }
    }
    if a.require_fence && !fence.as_ref().is_some_and(|f| layer.fences_all_of(f)) {
        anyhow::bail!("--require-fence: the kernel fence is not in force in full: {layer}");
    }
    // The fence as the kernel holds it: only the rights this kernel's ABI fences.
    let in_force = fence
        .map(|mut f| {
            f.handled_fs &= layer.fs_fenced();
            f
        })
        .filter(|f| f.handled_fs != 0);
    Ok((layer.to_string(), in_force))
}

fn run_body(a: &EnforceArgs, o: &mut Outcome) -> anyhow::Result<u8> {
    check_kernel()?;
    super::check_environment()?;
    if a.require_fence && matches!(a.mode, Mode::Audit | Mode::Ask) {
        anyhow::bail!(
            "--require-fence: --mode {} sets no kernel fence",
            format!("{:?}", a.mode).to_lowercase()
        );
    }
    // Ask mode needs someone to ask: refuse to start without a terminal.
    let tty = if a.mode == Mode::Ask {
        Some(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/tty")
                .context("--mode ask needs a controlling terminal (none is available)")?,
        )
    } else {
        None
    };
    let text = super::profile::read_profile(&a.profile)?;
    let env = super::profile::current_env();
    let policy = super::profile::load_policy(&a.profile, &text, &env, false)?;
    let profile_name = a.profile.display().to_string();
    let profile = parse_str(&profile_name, &text).map_err(|e| anyhow::anyhow!("{e}"))?;

    let arch = Arch::native();
    let mode = match a.mode {
        // Audit blocks nothing: the record filter traces gated and unknown syscalls instead of
        // refusing them, so each one is reported.
        Mode::Audit => FilterMode::Record,
        Mode::Kill => FilterMode::Enforce {
            allowed_gated: policy.allowed_syscalls(),
            on_gated: Refuse::Kill,
        },
        Mode::Deny | Mode::Ask => FilterMode::Enforce {
            allowed_gated: policy.allowed_syscalls(),
            on_gated: Refuse::Trace,
        },
    };
    // The race defence's region must stay mapped and read-only: every memory call that could
    // unmap, remap or re-protect it stops (and is refused); the JIT's ordinary mprotect calls
    // elsewhere run in-kernel. Audit mode and --unsafe-no-race-guard use no region.
    let guard = (a.mode != Mode::Audit && !a.unsafe_no_race_guard)
        .then_some(GuardWindow { base: WINDOW_BASE });
    let spec = FilterSpec {
        arch,
        mode,
        metadata: a.metadata,
        // The sink remembers threads' cwds (`keep_cwds` below), for the calls the guard
        // re-points at the checked path alone: chdir and fchdir must then stop. Without the
        // guard no remembered cwd is ever used, and they run in-kernel.
        cwd_changes: guard.is_some(),
        guard,
        // DNS answers matter when the profile names hosts, or to record them (-o).
        dns: policy.names_hosts() || a.output.is_some(),
        queries: true,
    };
    let programs = filter::build(&spec).context("cannot build the seccomp filter")?;
    if super::verbose() {
        let includes: Vec<&str> = profile.includes.iter().map(|i| i.name.as_str()).collect();
        eprintln!(
            "sbx: profile {profile_name}: {} rules, includes [{}]; mode {}; CWD={} HOME={} TMPDIR={}",
            profile.rules.len(),
            includes.join(", "),
            format!("{:?}", a.mode).to_lowercase(),
            env.cwd,
            env.home,
            env.tmpdir,
        );
    }
    super::describe_filter(arch, &programs, &spec);
    let sink_mode = match a.mode {
        // Tests only (debug builds): the ptrace layer blocks nothing, to show the fence alone.
        _ if no_ptrace_checks() => sink::Mode::Audit,
        Mode::Kill => sink::Mode::Kill,
        Mode::Deny => sink::Mode::Deny,
        Mode::Audit => sink::Mode::Audit,
        Mode::Ask => sink::Mode::Ask,
    };
    let header = super::header(arch, &a.command, a.metadata);
    let mut s = EnforceSink::new(arch, &policy, sink_mode, a.metadata);
    if spec.cwd_changes {
        s = s.keep_cwds();
    }
    if a.unsafe_no_race_guard {
        s = s.without_guard();
    }
    if a.unused {
        s = s.track_allowed();
    }
    if let Some(tty) = tty {
        s = s.ask_with(Box::new(TtyAsker::new(
            tty,
            a.profile.clone(),
            header.clone(),
            policy.has_scopes(),
        )));
    }
    if let Some(out) = &a.output {
        let f = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
        let w = TraceWriter::new(BufWriter::new(f), &header)
            .with_context(|| format!("cannot write {}", out.display()))?;
        s = s.record_to(RecordSink::new(arch, w));
    }
    super::note_no_new_privs();
    // Read before the fence is set: sbx's own file reads are fenced too once it is.
    let nameservers = super::profile::nameservers();
    // gdb's socket is bound before the kernel fence is set: sbx itself is fenced too.
    let gdb = match super::gdb_listener(a.gdb.as_deref())? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // The in-kernel layers under the checks (not in audit mode, which changes nothing).
    if a.mode != Mode::Audit {
        let (layers, fence) = enter_kernel_layers(a, &profile_name, &text, &env, &policy)?;
        o.layers = Some(layers);
        if let Some(f) = fence {
            s = s.with_fence(f);
        }
    }
    let mut status = super::status::StatusSink::new(&mut s);
    // A root workload configures no network (routes, addresses, firewall: netlink writes and
    // ioctls sbx does not stop) unless the profile says `syscall net_admin`, and has no raw
    // network access (raw and packet sockets are refused anyway; no rule describes them).
    use crate::tracer::spawn::{CAP_NET_ADMIN, CAP_NET_RAW};
    let drop_caps: &[u32] = match (a.mode, policy.syscall_allowed("net_admin")) {
        (Mode::Audit, _) => &[],
        (_, true) => &[CAP_NET_RAW],
        (_, false) => &[CAP_NET_ADMIN, CAP_NET_RAW],
    };
    let result = Tracer::run_with(
        &a.command,
        &programs,
        drop_caps,
        a.timeout.map(Into::into),
        gdb,
        &mut status,
    );
    status.clear();
    if super::verbose() {
        eprintln!("{}", status.summary());
    }
    let allowed = s.take_allowed();
    let done = s.finish()?;
    let mut violations = done.violations;
    let w = match result {
        Ok(w) => w,
        Err(e) => {
            o.violations = violations;
            o.error = Some(e.to_string());
            return super::tracer_error(e);
        }
    };

    // The diff: the profile against what learning would make of the profile plus the
    // violations.
    let widen_profile = |events: &[crate::event::Event]| {
        let mut learner = Learner::new(LearnOptions {
            includes: profile.includes.iter().map(|i| i.name.clone()).collect(),
            base: Some(profile.clone()),
            nameservers: nameservers.clone(),
            // A profile that binds rights to programs gets its new rights bound too.
            scope: policy.has_scopes(),
            ..LearnOptions::default()
        });
        learner.begin_trace(&header);
        for (pid, chain) in &done.chains {
            learner.set_chain(*pid, chain);
        }
        for ev in events {
            learner.observe(ev);
        }
        let mut widened = learner.finish();
        widened.header = profile.header.clone();
        widened
    };
    let widen = |events: &[crate::event::Event]| render(&widen_profile(events));
    let rendered = render(&profile);
    // The rules that came closest to admitting each violation (`sbx explain --check`).
    // On stderr for the first few violations; the report has them all.
    const PLACED: usize = 200;
    const SHOWN: usize = 5;
    for (n, v) in violations.iter_mut().take(PLACED).enumerate() {
        let chain = done
            .chains
            .get(&v.pid)
            .map(Vec::as_slice)
            .unwrap_or_default();
        v.closest = super::explain::closest_for(&policy, &env, v, chain);
        if super::chatty() && n < SHOWN {
            for c in &v.closest {
                eprintln!("sbx: closest rule to {} {}: {c}", v.verb, v.object);
            }
        }
    }
    let diff = if done.events.is_empty() && violations.is_empty() {
        String::new()
    } else {
        let color = a.color.enabled(&std::io::stderr());
        let mut widened = widen_profile(&done.events);
        note_closest(
            &mut widened,
            &rendered,
            &profile_name,
            &env,
            &violations,
            &done.chains,
        );
        crate::diff::unified(
            &rendered,
            &render(&widened),
            &profile_name,
            &format!("{profile_name} (+ violations)"),
            color,
        )
    };
    // Each violation's own rule and where it goes in the profile file (annotations, SARIF,
    // the job summary): learning from the names and that violation alone. The first
    // violations only: each is a learning run.
    let github = std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true");
    let placed = if a.report.is_some() || a.sarif.is_some() || github {
        PLACED
    } else {
        0
    };
    for (v, at) in violations.iter_mut().zip(&done.event_of).take(placed) {
        let Some(ev) = at.and_then(|i| done.events.get(i)) else {
            continue;
        };
        let mut events = done.events[..done.names].to_vec();
        events.push(ev.clone());
        if let Some(p) = crate::ci::placement(&text, &rendered, &widen(&events)) {
            v.rule = Some(p.rule);
            v.profile_line = Some(p.line);
        }
    }
    // Under GitHub Actions: one annotation per violation on the profile, where its rule goes.
    if github {
        let at = super::profile_in_repo(&a.profile).unwrap_or_else(|| profile_name.clone());
        for v in &violations {
            println!("{}", v.github_annotation(&at));
        }
    }
    if w.interrupted {
        eprintln!("sbx: interrupted twice: killed the workload");
    }
    if let Some(t) = a.timeout.filter(|_| w.timed_out) {
        eprintln!("sbx: the workload ran longer than --timeout {t}: killed");
    }
    let code = if !violations.is_empty() && a.mode != Mode::Audit {
        exit::VIOLATION
    } else if w.interrupted {
        exit::INTERRUPTED
    } else if w.timed_out {
        exit::TIMED_OUT
    } else {
        exit::workload(w.code())
    };
    if !violations.is_empty() {
        let what = match a.mode {
            Mode::Kill => "killed the workload",
            Mode::Ask
                if violations
                    .iter()
                    .any(|v| v.action == crate::report::Action::Killed) =>
            {
                "killed the workload"
            }
            Mode::Deny | Mode::Ask => "denied",
            Mode::Audit => "observed (audit mode, nothing blocked)",
        };
        if diff.is_empty() {
            // Only in-kernel kills: sbx never saw the syscall, so there is no rule to suggest.
            // See: tests/enforce.rs::gated_syscall_is_killed_in_kernel_denied_or_allowed_by_rule
            let in_kernel = violations.iter().any(|v| v.object == "(refused in-kernel)");
            let hint = if in_kernel {
                "run with --mode audit to see which rules are missing"
            } else if a.mode == Mode::Ask {
                "as answered: no rule is proposed for them"
            } else {
                "no rule can allow them"
            };
            eprintln!("sbx: {} violation(s), {what}; {hint}", violations.len());
        } else {
            if super::chatty() {
                eprintln!(
                    "sbx: {} violation(s), {what}; to accept them after review, add these rules:",
                    violations.len()
                );
                eprint!("{diff}");
            } else {
                eprintln!(
                    "sbx: {} violation(s), {what} (without -q, or in --report, the rules to add)",
                    violations.len()
                );
            }
        }
    }
    let unused = if a.unused {
        let list = unused_rules(&profile, &profile_name, &env, &allowed);
        if list.is_empty() {
            eprintln!("sbx: every path and network rule of {profile_name} was used");
        } else {
            eprintln!(
                "sbx: {} rule(s) of {profile_name} never used in this run (gated-syscall rules are not observable):",
                list.len()
            );
            for r in &list {
                eprintln!("  {r}");
            }
        }
        Some(list)
    } else {
        None
    };
    let (how, value) = match w.status {
        ExitStatus::Code(c) => ("exited", c),
        ExitStatus::Signal(s) => ("signaled", s),
    };
    o.workload = Some(WorkloadStatus {
        how: how.into(),
        value,
        killed_by_sbx: w.killed_by_sbx,
        timed_out: w.timed_out,
        interrupted: w.interrupted,
    });
    o.violations = violations;
    o.diff = diff;
    o.unused = unused;
    Ok(code)
}

/// In the proposed profile, above each new rule that admits a violation, which rule of the
/// profile came closest to admitting it (`# closest to VERB OBJECT: FILE:LINE: RULE ...`), so
/// the diff says why the existing rules were not enough. Rules the profile already has get
/// nothing (they are not in the diff).
fn note_closest(
    widened: &mut crate::profile::Profile,
    rendered: &str,
    profile_name: &str,
    env: &crate::profile::vars::Env,
    violations: &[crate::report::Violation],
    chains: &crate::tid::TidMap<Vec<Vec<u8>>>,
) {
    /// At most this many notes above one rule.
    const NOTES: usize = 3;
    if violations.iter().all(|v| v.closest.is_empty()) {
        return;
    }
    let Ok(policy) = crate::policy::CompiledPolicy::load(profile_name, &render(widened), env)
    else {
        return;
    };
    let old: std::collections::HashSet<&str> = rendered.lines().map(str::trim).collect();
    let mut notes: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for v in violations.iter().filter(|v| !v.closest.is_empty()) {
        let chain = chains.get(&v.pid).map(Vec::as_slice).unwrap_or_default();
        for rule in super::explain::admitting_rules(&policy, v, chain) {
            if old.contains(rule.as_str()) {
                continue;
            }
            let list = notes.entry(rule).or_default();
            for c in &v.closest {
                let note = format!("closest to {} {}: {c}", v.verb, v.object);
                if list.len() < NOTES && !list.contains(&note) {
                    list.push(note);
                }
            }
        }
    }
    for rule in &mut widened.rules {
        if let Some(list) = notes.get(&crate::profile::render::render_rule(rule)) {
            rule.comments.extend(list.iter().cloned());
        }
    }
}

/// Asks on the controlling terminal; "allow always" appends the learned rule to the profile.
#[derive(Debug)]
struct TtyAsker {
    tty: std::fs::File,
    /// Bytes read from the terminal and not yet taken as an answer (an incomplete line).
    typed: Vec<u8>,
    profile: std::path::PathBuf,
    header: crate::trace::Header,
    /// The question on screen: its prompt (shown again after an answer sbx does not know),
    /// its event (an "allow always" learns the rule from it) and the asker's exec chain.
    current: Option<(String, crate::event::Event, Vec<Vec<u8>>)>,
    /// The profile binds rights to programs: an "allow always" binds its rule to the
    /// asker's programs instead of giving it to every process.
    scoped: bool,
}

impl TtyAsker {
    fn new(
        tty: std::fs::File,
        profile: std::path::PathBuf,
        header: crate::trace::Header,
        scoped: bool,
    ) -> TtyAsker {
        TtyAsker {
            tty,
            typed: Vec::new(),
            profile,
            header,
            current: None,
            scoped,
        }
    }

    /// Learn the rule(s) for this one event and append them to the profile file.
    fn append_rule(
        &self,
        ev: &crate::event::Event,
        chain: &[Vec<u8>],
    ) -> anyhow::Result<Vec<String>> {
        use std::io::Write;
        let mut learner = Learner::new(LearnOptions {
            dir_threshold: 0,
            scope: self.scoped,
            ..LearnOptions::default()
        });
        learner.begin_trace(&self.header);
        learner.set_chain(ev.pid, chain);
        learner.observe(ev);
        let rules: Vec<String> = learner
            .finish()
            .rules
            .iter()
            .map(crate::profile::render::render_rule)
            .collect();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.profile)?;
        writeln!(f, "# added by sbx enforce --mode ask")?;
        for r in &rules {
            writeln!(f, "{r}")?;
        }
        Ok(rules)
    }

    fn say(&mut self, text: &str) -> bool {
        use std::io::Write;
        (&self.tty).write_all(text.as_bytes()).is_ok()
    }

    /// A whole line typed so far (`\n` or `\r`: a terminal in raw mode sends the latter).
    fn take_line(&mut self) -> Option<String> {
        let end = self.typed.iter().position(|&b| b == b'\n' || b == b'\r')?;
        let line: Vec<u8> = self.typed.drain(..=end).collect();
        Some(String::from_utf8_lossy(&line).into_owned())
    }

    /// The next line typed, waiting up to `timeout` for the terminal to have input; never
    /// blocks on an incomplete line. SIGCHLD (a tracee stopped: the tracer has work) is let
    /// through during the wait and ends it; see `tracer::sigchld_wakeups`. `Err` when the
    /// terminal is gone.
    fn next_line(&mut self, timeout: std::time::Duration) -> Result<Option<String>, ()> {
        use nix::sys::signal::{SigSet, Signal};
        use std::io::Read;
        use std::os::fd::AsFd;
        if let Some(l) = self.take_line() {
            return Ok(Some(l));
        }
        let mut fds = [nix::poll::PollFd::new(
            self.tty.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let mut mask = SigSet::thread_get_mask().unwrap_or_else(|_| SigSet::empty());
        mask.remove(Signal::SIGCHLD);
        let ts = nix::sys::time::TimeSpec::from_duration(timeout);
        // EINTR (a tracee stopped, or a signal to sbx): no answer yet; the tracer looks and
        // polls again.
        if !matches!(nix::poll::ppoll(&mut fds, Some(ts), Some(mask)), Ok(n) if n > 0) {
            return Ok(None);
        }
        // Readable: one read returns what is there without blocking.
        let mut buf = [0u8; 256];
        match (&self.tty).read(&mut buf) {
            Ok(0) => Err(()),
            Ok(n) => {
                self.typed.extend_from_slice(&buf[..n]);
                Ok(self.take_line())
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            Err(_) => Err(()),
        }
    }
}

impl sink::Asker for TtyAsker {
    fn show(&mut self, v: &crate::report::Violation, ev: &crate::event::Event, chain: &[Vec<u8>]) {
        // A credential place or a file that runs later outside the sandbox: say so first.
        let path = v.object.split(" (-> ").last().unwrap_or(&v.object);
        let path = path
            .strip_suffix(')')
            .filter(|_| v.object.contains(" (-> "))
            .unwrap_or(path);
        let home = std::env::var("HOME").unwrap_or_default();
        let rel = match path.strip_prefix(&format!("{home}/")) {
            Some(r) if !home.is_empty() => format!("${{HOME}}/{r}"),
            _ => path.to_string(),
        };
        let warning = if crate::learn::generalize::is_secret(&rel)
            || crate::learn::generalize::is_secret_place(&rel)
        {
            "\n     WARNING: a secret place (keys, tokens, credentials): allow it only if you know why"
        } else if matches!(v.verb.as_str(), "write" | "create")
            && crate::learn::generalize::is_persistence_place(&rel)
        {
            "\n     WARNING: persistence: this file runs later, outside the sandbox (login, schedule, git)"
        } else {
            ""
        };
        let prompt = format!(
            "\nsbx: {}{warning}\n     syscall {}, thread {} stopped until you answer (other threads run on)\n     [o] allow once  [a] allow always (add to {})  [d] deny  [k] kill ? ",
            v.subject(),
            v.syscall,
            v.tid,
            self.profile.display()
        );
        self.say(&prompt);
        self.current = Some((prompt, ev.clone(), chain.to_vec()));
    }

    fn poll(&mut self, timeout: std::time::Duration) -> Option<sink::Answer> {
        let line = match self.next_line(timeout) {
            Ok(Some(line)) => line,
            Ok(None) => return None,
            // No answer possible (terminal gone): fail closed.
            Err(()) => return Some(sink::Answer::Kill),
        };
        let answer = match line.trim() {
            "o" | "once" => sink::Answer::Once,
            "a" | "always" => {
                let msg = match self
                    .current
                    .as_ref()
                    .map(|(_, ev, chain)| self.append_rule(ev, chain))
                {
                    Some(Ok(rules)) => format!(
                        "sbx: added to {}: {}\n",
                        self.profile.display(),
                        rules.join(", ")
                    ),
                    Some(Err(e)) => format!(
                        "sbx: could not update {}: {e:#} (allowed for this run only)\n",
                        self.profile.display()
                    ),
                    None => String::new(),
                };
                self.say(&msg);
                sink::Answer::Always
            }
            "d" | "deny" => sink::Answer::Deny,
            "k" | "kill" => sink::Answer::Kill,
            other => {
                // Not an answer: say why, and ask again.
                let _ = self.say(&format!(
                    "sbx: {other:?} is not an answer: type o, a, d or k (or once, always, deny, kill) and Enter\n"
                ));
                let prompt = self.current.as_ref().map(|(p, _, _)| p.clone());
                if let Some(p) = prompt
                    && !self.say(&p)
                {
                    return Some(sink::Answer::Kill);
                }
                return None;
            }
        };
        self.current = None;
        Some(answer)
    }

    fn withdraw(&mut self, v: &crate::report::Violation) {
        // What was typed for the withdrawn question must not answer the next one.
        self.current = None;
        self.typed.clear();
        let _ = nix::sys::termios::tcflush(&self.tty, nix::sys::termios::FlushArg::TCIFLUSH);
        self.say(&format!(
            "\nsbx: thread {} is gone; question withdrawn\n",
            v.tid
        ));
    }
}

/// The allow rules of the profile file itself (not its includes) that admitted none of the
/// `allowed` accesses. `syscall` rules are left out: allowed gated syscalls run in-kernel and
/// are never seen.
fn unused_rules(
    profile: &crate::profile::Profile,
    file: &str,
    env: &crate::profile::vars::Env,
    allowed: &[(crate::event::AccessSet, crate::event::Object)],
) -> Vec<String> {
    use crate::event::{AccessSet, Object, PathObj};
    use crate::policy::{CompiledPolicy, Decision};
    use crate::profile::snippets::{Origin, Resolved};
    use crate::profile::{Effect, Pattern};
    let mut out = Vec::new();
    for rule in &profile.rules {
        if rule.effect != Effect::Allow || matches!(rule.pattern, Pattern::Syscall(_)) {
            continue;
        }
        let one = Resolved {
            rules: vec![(
                rule.clone(),
                Origin {
                    file: file.to_string(),
                },
            )],
        };
        let Ok(p) = CompiledPolicy::compile(&one, env) else {
            continue;
        };
        let admits = |access: AccessSet, obj: &Object| {
            !matches!(p.decide(access, obj), Decision::Deny { .. })
        };
        let used = allowed.iter().any(|(access, obj)| {
            access.iter().any(|a| {
                let a = AccessSet::of(a);
                match obj {
                    // Each name on its own: another rule may have admitted the other one.
                    Object::Path(po) => [Some(&po.abs), po.resolved.as_ref()]
                        .into_iter()
                        .flatten()
                        .any(|c| {
                            admits(
                                a,
                                &Object::Path(PathObj {
                                    literal: vec![],
                                    abs: c.clone(),
                                    resolved: None,
                                }),
                            )
                        }),
                    o => admits(a, o),
                }
            })
        });
        if !used {
            out.push(crate::profile::render::render_rule(rule));
        }
    }
    out
}
