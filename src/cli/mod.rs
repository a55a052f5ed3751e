//! The command line: clap definitions (their doc comments are the `--help`) and dispatch.
//! Only this layer uses `anyhow`; it adds the context (file names) errors need.

pub mod enforce;
pub mod exit;
pub mod explain;
pub mod learn;
pub mod profile;
pub mod record;
pub mod show;
pub mod status;

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;

use clap::{Parser, Subcommand};

/// sbx: learn a sandbox policy from a real run, then enforce it.
///
/// Exit codes: the workload's own status (128+N when killed by signal N); 124 policy
/// violation; 125 sbx error (bad profile or trace, unsupported kernel); 126 command not
/// executable; 127 command not found; 2 usage error.
#[derive(Debug, Parser)]
#[command(
    name = "sbx",
    version = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("SBX_GIT_REV"), ")"),
    propagate_version = true,
    about,
    long_about,
    after_long_help = "Examples:
  sbx record -- npm install                  # watch one run -> trace.bin
  sbx learn trace.bin > npm.profile          # generalize it into a profile
  sbx enforce npm.profile -- npm install     # kill the run on the first violation
  sbx enforce --mode audit -o seen.bin npm.profile -- npm install
  sbx learn --base npm.profile seen.bin -o npm.profile   # accept reviewed changes

Documentation: README.md and docs/ in the source tree (profile format, security, CI)."
)]
pub struct Cli {
    /// Print less: no notes or warnings, no diff after violations (errors and violation lines
    /// are always printed).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more: what sbx sets up (filters, counts) and, at the end of record or enforce,
    /// the syscall stops of the run by call and sbx's own CPU time.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command under the tracer and write what it does to a trace.
    ///
    /// Example: sbx record -o npm.trace -- npm install
    Record(RecordArgs),
    /// Print a trace, one strace-like line per event (or JSON Lines).
    ///
    /// Example: sbx show --comm node --syscall openat trace.bin
    Show(ShowArgs),
    /// Summarize a trace: process tree, files by directory, network peers, gated syscalls.
    ///
    /// Example: sbx stats trace.bin
    Stats(StatsArgs),
    /// Generalize one or more traces into a profile.
    ///
    /// Example: sbx learn run1.bin run2.bin -o npm.profile
    Learn(LearnArgs),
    /// Run a command under a profile: kill (or deny, or report) what the profile does not allow.
    ///
    /// Example: sbx enforce npm.profile -- npm install
    Enforce(EnforceArgs),
    /// Parse and validate a profile (exit 0 when valid, 1 when not).
    ///
    /// Example: sbx check npm.profile
    Check(CheckArgs),
    /// Rule-level unified diff of two profiles (exit 0 when they allow the same, 1 when their rules differ; comments alone do not count).
    ///
    /// Example: sbx diff old.profile new.profile
    Diff(DiffArgs),
    /// Why each rule of a profile is there (programs, events, examples, runs), from recorded
    /// runs; or, with --check, which rule admits or refuses one access.
    ///
    /// Example: sbx explain npm.profile run1.bin run2.bin
    Explain(ExplainArgs),
    /// List the shipped profile snippets, or print one.
    ///
    /// Example: sbx profiles node
    Profiles(ProfilesArgs),
    /// List the syscall table of this architecture with each syscall's class.
    ///
    /// Example: sbx syscalls --stopped
    Syscalls(SyscallsArgs),
    /// Render a saved `--report` for CI: a GitHub job summary (Markdown), workflow annotations,
    /// SARIF 2.1.0 or a GitLab Code Quality report.
    ///
    /// Example: sbx report --format summary sbx-report.json >> "$GITHUB_STEP_SUMMARY"
    Report(ReportArgs),
    /// Print a shell completion script.
    ///
    /// Example: sbx completions bash > /etc/bash_completion.d/sbx
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): sbx(1), or one subcommand's (sbx-enforce(1)...); with --dir,
    /// write every page there.
    ///
    /// Example: sbx man --dir /usr/local/share/man/man1; man sbx-enforce
    Man(ManArgs),
}

/// When to color output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to color what goes to `stream`. `auto` follows the usual conventions through
    /// anstream: NO_COLOR turns colour off, CLICOLOR_FORCE on, CLICOLOR=0 off; otherwise
    /// colour on a terminal that supports it.
    pub fn enabled(self, stream: &impl anstream::stream::RawStream) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => matches!(
                anstream::AutoStream::choice(stream),
                anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi
            ),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Where to write the trace.
    #[arg(short, long, default_value = "trace.bin")]
    pub output: PathBuf,
    /// Also stop on metadata syscalls (stat, access, readlink...): slower, finer profiles.
    #[arg(long)]
    pub metadata: bool,
    /// Kill the whole tree after this long (e.g. 90s, 10m, 1h30m): sbx waits for every
    /// descendant, background ones included, as strace -f does. Exit 137.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<humantime::Duration>,
    /// Serve the GDB remote protocol on ADDR (127.0.0.1:PORT, [::1]:PORT or a unix socket
    /// path): the workload waits after its first exec for `gdb -ex 'target extended-remote
    /// ADDR' PROGRAM`, and every sandbox check keeps running. See docs/gdb.md.
    #[arg(long, value_name = "ADDR")]
    pub gdb: Option<String>,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The trace to print.
    pub trace: PathBuf,
    /// JSON Lines instead of text.
    #[arg(long)]
    pub json: bool,
    /// Only events of these process or thread ids.
    #[arg(long)]
    pub pid: Vec<i32>,
    /// Only events of processes with this comm (e.g. node).
    #[arg(long)]
    pub comm: Vec<String>,
    /// Only these syscalls (e.g. openat).
    #[arg(long)]
    pub syscall: Vec<String>,
    /// Only events touching a path matching this glob (e.g. '/etc/**').
    #[arg(long)]
    pub path: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// The trace to summarize.
    pub trace: PathBuf,
    /// Print only the number of events.
    #[arg(long)]
    pub count: bool,
}

#[derive(Debug, clap::Args)]
pub struct LearnArgs {
    /// The traces to learn from (several runs are merged).
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Write the profile here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Widen this existing profile: its rules are kept.
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// A directory with at least this many distinct children used the same way becomes dir/**.
    #[arg(long, visible_alias = "dir-threshold", default_value_t = crate::learn::DEFAULT_DIR_THRESHOLD)]
    pub threshold: usize,
    /// Include these shipped snippets (default: base, plus node/python/shell/git when the
    /// trace ran them, dns when it got a DNS answer, ssl/tmp when they shorten the profile).
    #[arg(long = "include")]
    pub includes: Vec<String>,
    /// Do not include any shipped snippet.
    #[arg(long)]
    pub no_includes: bool,
    /// Learn every right for every process of the tree: no `by` lists binding secret places
    /// and network peers to the programs that used them.
    #[arg(long)]
    pub no_scope: bool,
    /// Write a comment above each rule with its evidence in the traces (`# 3/3 runs; 12
    /// events; by npm; e.g. ${HOME}/.npm/_cacache/...`, as `sbx explain` finds it).
    #[arg(long)]
    pub annotate: bool,
}

/// What enforce does on a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// SIGKILL the whole tree before the violating syscall runs (default).
    Kill,
    /// The violating syscall fails with EACCES/EPERM; the run goes on.
    Deny,
    /// Nothing is blocked; every violation is reported.
    Audit,
    /// Interactive: on a violation the thread stays stopped (the others run on) and sbx asks on
    /// the terminal (allow once, allow always — the rule is appended to the profile —, deny,
    /// kill).
    Ask,
}

#[derive(Debug, clap::Args)]
pub struct EnforceArgs {
    /// The profile to enforce.
    pub profile: PathBuf,
    /// What to do on a violation.
    #[arg(long, value_enum, default_value_t = Mode::Kill)]
    pub mode: Mode,
    /// Also record the run (all events) to this trace, e.g. for `sbx learn --base`.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write a JSON report (violations, diff, exit status) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write the violations as SARIF 2.1.0 here (for code-scanning tools), located in the
    /// profile where each proposed rule would go.
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Also check metadata syscalls (stat, access, readlink...) against `stat` rules.
    #[arg(long)]
    pub metadata: bool,
    /// List the profile rules that the run never used.
    #[arg(long)]
    pub unused: bool,
    /// Kill the whole tree after this long (e.g. 90s, 10m, 1h30m): sbx waits for every
    /// descendant, background ones included, as strace -f does. Exit 137, and the report says
    /// `timed_out`.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<humantime::Duration>,
    /// Color the diff.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Testing only: turn the race defences off (argument copies, openat2 rewriting, exit
    /// checks of opens), to show the races are real and to measure what the defences cost.
    /// Prints a warning; never use it to protect anything.
    #[arg(long, hide = true)]
    pub unsafe_no_race_guard: bool,
    /// Fail (exit 125) unless the kernel fence derived from the profile (Landlock file rights
    /// and TCP ports) is in force in full: without it, a kernel without Landlock or with an
    /// older ABI runs the ptrace checks alone, or a weaker fence.
    #[arg(long)]
    pub require_fence: bool,
    /// Do not set the kernel fence (Landlock file rights and TCP ports derived from the
    /// profile); the ptrace checks and the Landlock scopes stay.
    #[arg(long, conflicts_with = "require_fence")]
    pub no_fence: bool,
    /// Serve the GDB remote protocol on ADDR (127.0.0.1:PORT, [::1]:PORT or a unix socket
    /// path): the workload waits after its first exec for `gdb -ex 'target extended-remote
    /// ADDR' PROGRAM`, and every sandbox check keeps running. See docs/gdb.md.
    #[arg(long, value_name = "ADDR")]
    pub gdb: Option<String>,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// What `sbx report` makes of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Markdown for `$GITHUB_STEP_SUMMARY`: verdict, counts, violations, the suggested change.
    Summary,
    /// GitHub workflow commands, one `::error` (`::warning` in audit mode) per violation.
    Annotations,
    /// SARIF 2.1.0.
    Sarif,
    /// GitLab Code Quality (CodeClimate JSON).
    Codequality,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// What to print.
    #[arg(long, value_enum)]
    pub format: ReportFormat,
    /// A report written by `sbx enforce --report`.
    pub report: PathBuf,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The profile to check.
    pub profile: PathBuf,
}

/// What `sbx explain` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExplainFormat {
    /// Text for a terminal or a pull request comment.
    Text,
    /// JSON for tools.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The profile to explain.
    pub profile: PathBuf,
    /// Recorded runs (`sbx record -o`, `sbx enforce -o`) to explain it by.
    pub traces: Vec<PathBuf>,
    /// Which rule admits or refuses VERB on OBJECT (`read /etc/passwd`, `connect tcp
    /// 10.0.0.1:443`, `connect registry.npmjs.org:443`, `resolve example.org`, `syscall
    /// ptrace`); exit 0 allowed, 1 refused, 3 allowed only while the path is missing.
    #[arg(long, num_args = 2, value_names = ["VERB", "OBJECT"])]
    pub check: Option<Vec<String>>,
    /// With --check: the exec chain asking, newest first (`'npm <- bash'`): `program` names
    /// of the profile or absolute program paths.
    #[arg(long)]
    pub chain: Option<String>,
    /// With --check: the path is missing (the call fails with ENOENT).
    #[arg(long)]
    pub missing: bool,
    /// The base profile the profile was learned on (`sbx learn --base BASE`): its rules are
    /// shown as `from base BASE:LINE`.
    #[arg(long, value_name = "BASE")]
    pub base: Option<PathBuf>,
    /// Text or JSON.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    pub old: PathBuf,
    pub new: PathBuf,
    /// Color the diff.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {
    /// Print this snippet instead of listing them all.
    pub name: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (the top page, sbx(1), without one).
    pub subcommand: Option<String>,
    /// Write sbx.1 and one sbx-SUBCOMMAND.1 per subcommand into this directory instead.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct SyscallsArgs {
    /// Print only the names of the syscalls `sbx record` stops on (checked, gated, creds).
    #[arg(long)]
    pub stopped: bool,
}

/// `sbx man`: one page to stdout, or all of them into a directory.
fn man(a: ManArgs) -> anyhow::Result<u8> {
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    // Subcommands get their man names (`sbx-enforce`) and inherited settings.
    cmd.build();
    if let Some(dir) = &a.dir {
        clap_mangen::generate_to(cmd, dir)
            .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
        if chatty() {
            eprintln!("sbx: man pages written to {}", dir.display());
        }
        return Ok(exit::OK);
    }
    let page = match &a.subcommand {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) if !sub.is_hide_set() => sub.clone(),
            _ => {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(clap::Command::get_name)
                    .collect();
                return usage_error(&format!(
                    "no subcommand {name:?} (one of: {})",
                    names.join(", ")
                ));
            }
        },
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    // One write: a closed pipe (`| head`) is an io::Error that main() treats as success.
    std::io::Write::write_all(&mut std::io::stdout(), &out)?;
    Ok(exit::OK)
}

/// Run the parsed command; returns the process exit code.
/// `--gdb ADDR` checked and bound before the workload starts. `Err` is the exit code of a
/// refused address (usage, one line already printed).
pub(crate) fn gdb_listener(
    addr: Option<&str>,
) -> anyhow::Result<Result<Option<crate::tracer::gdb::Listener>, u8>> {
    use crate::tracer::gdb;
    let Some(addr) = addr else {
        return Ok(Ok(None));
    };
    let addr = match gdb::parse_addr(addr) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("sbx: error: {e}");
            return Ok(Err(exit::USAGE));
        }
    };
    let l =
        gdb::Listener::bind(&addr).with_context(|| format!("--gdb: cannot listen on {addr}"))?;
    Ok(Ok(Some(l)))
}

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    VERBOSITY.store(
        if cli.quiet {
            0
        } else if cli.verbose {
            2
        } else {
            1
        },
        std::sync::atomic::Ordering::Relaxed,
    );
    match cli.command {
        Command::Record(a) => record::run(a),
        Command::Show(a) => show::run_show(a),
        Command::Stats(a) => show::run_stats(a),
        Command::Learn(a) => learn::run(a),
        Command::Enforce(a) => enforce::run(a),
        Command::Check(a) => profile::run_check(a),
        Command::Diff(a) => profile::run_diff(a),
        Command::Explain(a) => explain::run(a),
        Command::Profiles(a) => profile::run_profiles(a),
        Command::Syscalls(a) => profile::run_syscalls(a),
        Command::Report(a) => enforce::run_report(a),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            // Into a buffer, then one write: a closed pipe (`| head`) is an io::Error that
            // main() treats as success, where clap_complete's own writes would panic.
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "sbx", &mut out);
            std::io::Write::write_all(&mut std::io::stdout(), &out)?;
            Ok(exit::OK)
        }
        Command::Man(a) => man(a),
    }
}

/// 0 = quiet, 1 = normal, 2 = verbose.
static VERBOSITY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);

/// Whether notes and warnings are printed (not with `-q`).
pub fn chatty() -> bool {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) >= 1
}

/// Whether `-v` was given.
pub fn verbose() -> bool {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) >= 2
}

/// The trace header for a run of `argv` starting now.
/// May an output file be replaced by renaming a finished file over it? Only when nothing is
/// there yet or it is a regular file: a device (`/dev/null`), a pipe or a symlink is written
/// in place instead (a rename would replace the node itself).
pub fn replaceable(p: &std::path::Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) => m.file_type().is_file(),
        Err(_) => true,
    }
}

pub fn header(arch: crate::arch::Arch, argv: &[OsString], metadata: bool) -> crate::trace::Header {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let env_bytes = |k: &str| {
        std::env::var_os(k)
            .map(OsStringExt::into_vec)
            .unwrap_or_default()
    };
    let tmpdir = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map(OsStringExt::into_vec)
        .unwrap_or_else(|| b"/tmp".to_vec());
    let uid = nix::unistd::getuid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    crate::trace::Header {
        sbx_version: env!("CARGO_PKG_VERSION").to_string(),
        arch,
        kernel: nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
        cwd: std::env::current_dir()
            .map(|d| d.into_os_string().into_vec())
            .unwrap_or_default(),
        home: env_bytes("HOME"),
        tmpdir,
        uid: uid.as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        user,
        start_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        metadata,
    }
}

/// As non-root, the kernel accepts a seccomp filter only with `no_new_privs`, which disables
/// setuid elevation in the workload: say so once.
pub fn note_no_new_privs() {
    if !chatty() || crate::tracer::caps::may_skip_no_new_privs() {
        return;
    }
    let who = if nix::unistd::geteuid().is_root() {
        "as root without CAP_SYS_ADMIN"
    } else {
        "as a non-root user"
    };
    eprintln!(
        "sbx: note: running {who}, so the workload runs with no_new_privs: setuid programs in it (sudo, su, ping...) will not gain privileges"
    );
}

/// The profile's path from the repository's root, as CI resolves annotation and SARIF paths:
/// the root is `GITHUB_WORKSPACE` (GitHub), `CI_PROJECT_DIR` (GitLab), else the nearest
/// directory above the profile holding `.git`. `None` when the profile lies outside it.
pub fn profile_in_repo(profile: &std::path::Path) -> Option<String> {
    let abs = std::fs::canonicalize(profile).ok()?;
    let from_env = ["GITHUB_WORKSPACE", "CI_PROJECT_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .find_map(|v| std::fs::canonicalize(v).ok());
    let root = from_env.or_else(|| {
        abs.ancestors()
            .skip(1)
            .find(|d| d.join(".git").exists())
            .map(std::path::Path::to_path_buf)
    })?;
    let rel = abs.strip_prefix(&root).ok()?;
    Some(rel.to_string_lossy().into_owned())
}

/// Find out what this environment lets sbx do (by trying: `tracer::facilities`), say it under
/// `-v`, and fail (exit 125, one line naming the refused feature and the option that allows
/// it) where sbx cannot run safely.
pub fn check_environment() -> anyhow::Result<crate::tracer::facilities::Facilities> {
    let f = crate::tracer::facilities::probe();
    if verbose() {
        eprintln!("{}", f.describe());
    }
    if let Some(e) = f.refusal() {
        anyhow::bail!(e);
    }
    Ok(f)
}

/// `-v`: what the seccomp filter makes the workload stop on, before the run.
pub fn describe_filter(
    arch: crate::arch::Arch,
    programs: &[seccompiler::BpfProgram],
    spec: &crate::filter::FilterSpec,
) {
    use crate::arch::Class;
    if !verbose() {
        return;
    }
    let insns: usize = programs.iter().map(Vec::len).sum();
    let count = |c: Class| arch.table().iter().filter(|d| d.class == c).count();
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    eprintln!(
        "sbx: {}, Linux {release}; seccomp: {} programs, {insns} BPF instructions",
        arch.name(),
        programs.len()
    );
    eprintln!(
        "sbx: stops on {} checked + {} credential syscalls{}{}{}; {} gated syscalls {}; {} run in-kernel",
        count(Class::Checked),
        count(Class::Creds),
        if spec.metadata {
            format!(" + {} metadata", count(Class::Metadata))
        } else {
            String::new()
        },
        if spec.dns { " + DNS answers" } else { "" },
        if spec.guard.is_some() {
            " + memory calls over the guard region"
        } else {
            ""
        },
        count(Class::Gated),
        match &spec.mode {
            crate::filter::FilterMode::Record => "stopped and logged".to_string(),
            crate::filter::FilterMode::Enforce { allowed_gated, .. } => format!(
                "refused in-kernel unless allowed ({} allowed: {})",
                allowed_gated.len(),
                if allowed_gated.is_empty() {
                    "none".to_string()
                } else {
                    allowed_gated.join(", ")
                }
            ),
        },
        count(Class::Free),
    );
}

/// Turn a tracer error into sbx's exit code, printing the one-line message.
/// A usage error found after parsing (an unknown snippet, a bad glob, an unknown syscall
/// name): printed like clap's, exit 2.
pub fn usage_error(msg: &str) -> anyhow::Result<u8> {
    eprintln!("sbx: error: {msg}");
    Ok(exit::USAGE)
}

pub fn tracer_error(e: crate::tracer::Error) -> anyhow::Result<u8> {
    use crate::tracer::Error;
    match e {
        Error::CommandNotFound { .. } => {
            eprintln!("sbx: error: {e}");
            Ok(exit::NOT_FOUND)
        }
        Error::NotExecutable { .. } => {
            eprintln!("sbx: error: {e}");
            Ok(exit::NOT_EXECUTABLE)
        }
        e => Err(e.into()),
    }
}
