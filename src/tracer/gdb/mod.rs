//! `--gdb ADDR`: sbx serves the GDB remote protocol for the workload it traces.
//!
//! A process has one tracer, and under sbx that is sbx; so sbx itself is gdb's stub (the
//! `gdbstub` crate speaks the protocol, [`target`] is the debuggee). The tracer loop stays
//! the only one that waits for tracees: it hands this module each stop gdb may care about and
//! asks it before resuming a thread ([`target::Debuggee::hold`]); between stops it lets the
//! session read what gdb sent ([`Session::poll`]) and report what is due ([`Session::pump`]).
//! Sandbox stops (seccomp, exit watches, the race guard's injections) are handled as without
//! gdb and never reported; a violation is (a SIGSYS stop with sbx's violation line as console
//! output).
//!
//! The listening socket is sbx's: loopback TCP or a unix socket ([`parse_addr`]), bound
//! before the workload starts. When no `--gdb` is given none of this runs.

pub mod regs;
pub mod target;
pub mod wire;

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use gdbstub::conn::Connection;
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{DisconnectReason, GdbStub, MultiThreadStopReason};

use crate::event::ExitStatus;
use target::Debuggee;
use wire::{Action, Framer, Outbox, Unit, Wire};

/// Where gdb connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(a) => write!(f, "{a}"),
            Addr::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// `--gdb`'s value: `127.0.0.1:PORT`, `[::1]:PORT` (any loopback address) or a unix socket
/// path (anything with a `/`, or without a `:`). A non-loopback address is refused: the
/// protocol lets whoever connects run code in the workload.
pub fn parse_addr(s: &str) -> Result<Addr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        if a.ip().is_loopback() {
            return Ok(Addr::Tcp(a));
        }
        return Err(format!(
            "--gdb {s:?}: not a loopback address; gdb's protocol gives whoever connects the \
             workload, so sbx listens on 127.0.0.1:PORT, [::1]:PORT or a unix socket path only"
        ));
    }
    if s.is_empty() || (!s.contains('/') && s.contains(':')) {
        return Err(format!(
            "--gdb {s:?}: expected 127.0.0.1:PORT, [::1]:PORT or a unix socket path (a host \
             name is not accepted)"
        ));
    }
    Ok(Addr::Unix(PathBuf::from(s)))
}

/// The bound socket gdb connects to.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener, Addr),
    Unix(UnixListener, Addr),
}

impl Listener {
    /// Bind `addr` (a unix socket path must not exist yet, or be a socket nobody listens on;
    /// it is made mode 0600, and removed when closed where the kernel fence lets sbx).
    /// Close-on-exec: the workload never inherits it.
    pub fn bind(addr: &Addr) -> std::io::Result<Listener> {
        Ok(match addr {
            Addr::Tcp(a) => Listener::Tcp(TcpListener::bind(a)?, addr.clone()),
            Addr::Unix(p) => {
                let l = match UnixListener::bind(p) {
                    // A socket left by an earlier run (under the kernel fence sbx cannot remove
                    // it): reused when nothing listens on it.
                    Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && stale(p) => {
                        std::fs::remove_file(p)?;
                        UnixListener::bind(p)?
                    }
                    r => r?,
                };
                // Only sbx's user (and root) may connect: a connection drives the workload.
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))?;
                Listener::Unix(l, addr.clone())
            }
        })
    }

    fn addr(&self) -> &Addr {
        match self {
            Listener::Tcp(_, a) | Listener::Unix(_, a) => a,
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Tcp(l, _) => l.as_fd(),
            Listener::Unix(l, _) => l.as_fd(),
        }
    }

    fn accept(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Listener::Tcp(l, _) => {
                let (s, _) = l.accept()?;
                let _ = s.set_nodelay(true);
                Stream::Tcp(s)
            }
            Listener::Unix(l, _) => Stream::Unix(l.accept()?.0),
        })
    }
}

/// Whether `p` is a unix socket nobody listens on.
fn stale(p: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
        && UnixStream::connect(p).is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, Addr::Unix(p)) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// gdb's connection.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }

    fn read_some(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn send(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => Write::write_all(s, buf),
            Stream::Unix(s) => Write::write_all(s, buf),
        }
    }
}

/// gdbstub's side of the connection: each packet it writes goes out through
/// [`wire::outbound`] (real processes in thread ids, the fields it cannot write).
struct Conn {
    stream: Stream,
    wire: Rc<RefCell<Wire>>,
    outbox: Outbox,
}

impl Connection for Conn {
    type Error = std::io::Error;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        let out = self.outbox.push(byte, &mut self.wire.borrow_mut());
        if out.is_empty() {
            return Ok(());
        }
        self.stream.send(&out)
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        buf.iter().try_for_each(|&b| self.write(b))
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        match &mut self.stream {
            Stream::Tcp(s) => Write::flush(s),
            Stream::Unix(s) => Write::flush(s),
        }
    }
}

type Machine = GdbStubStateMachine<'static, Debuggee, Conn>;

/// What the tracer must do after [`Session::poll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on.
    Continue,
    /// gdb detached or went away: every thread runs on without it.
    Detach,
    /// gdb killed the program: kill the tree.
    Kill,
}

/// One gdb session over one run.
pub struct Session {
    /// Until gdb connects: one connection is taken, then the socket is closed (and a unix
    /// socket's path removed), so nothing, the workload included, can connect later.
    listener: Option<Listener>,
    machine: Option<Machine>,
    reader: Option<Stream>,
    /// Cuts what gdb sends into packets, for [`wire::inbound`].
    framer: Framer,
    wire: Rc<RefCell<Wire>>,
    /// The last [`Session::poll`] read something.
    read_any: bool,
    pub target: Debuggee,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("listener", &self.listener)
            .field("connected", &self.machine.is_some())
            .finish_non_exhaustive()
    }
}

/// `$O<hex>#cs`: console output gdb prints as it comes.
fn console_packet(text: &str) -> Vec<u8> {
    let mut body = String::from("O");
    for b in text.bytes() {
        body.push_str(&format!("{b:02x}"));
    }
    let sum = body.bytes().fold(0u8, u8::wrapping_add);
    format!("${body}#{sum:02x}").into_bytes()
}

impl Session {
    pub fn new(listener: Listener) -> Session {
        Session {
            listener: Some(listener),
            machine: None,
            reader: None,
            framer: Framer::default(),
            wire: Rc::default(),
            read_any: false,
            target: Debuggee::default(),
        }
    }

    /// Whether gdb is connected.
    pub fn connected(&self) -> bool {
        self.machine.is_some()
    }

    /// The socket to wait on: gdb's connection.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.reader.as_ref().map(Stream::fd)
    }

    /// The workload's first program is about to run its first instruction (thread `root`,
    /// in its exec stop): wait for gdb. `give_up` is asked every half second (sbx
    /// interrupted, `--timeout`).
    pub fn attach(&mut self, root: i32, give_up: &dyn Fn() -> bool) -> Result<(), String> {
        let Some(listener) = self.listener.take() else {
            return Err("no socket to wait on".into());
        };
        eprintln!(
            "sbx: waiting for gdb on {} (gdb -ex 'target extended-remote {}' PROGRAM)",
            listener.addr(),
            listener.addr()
        );
        loop {
            let mut fds = [nix::poll::PollFd::new(
                listener.fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(500u16)) {
                Ok(n) if n > 0 => break,
                _ if give_up() => return Err("no gdb connected".into()),
                _ => {}
            }
        }
        let stream = listener
            .accept()
            .map_err(|e| format!("cannot accept gdb's connection: {e}"))?;
        drop(listener);
        let reader = stream
            .try_clone()
            .map_err(|e| format!("cannot use gdb's connection: {e}"))?;
        self.target.start(root);
        let conn = Conn {
            stream,
            wire: Rc::clone(&self.wire),
            outbox: Outbox::default(),
        };
        let machine = GdbStub::new(conn)
            .run_state_machine(&mut self.target)
            .map_err(|e| format!("gdb: {e}"))?;
        self.machine = Some(machine);
        self.reader = Some(reader);
        Ok(())
    }

    /// Read what gdb sent (waiting up to `timeout` for it, a tracee stop ends the wait
    /// early: SIGCHLD is let through) and act on it.
    pub fn poll(&mut self, timeout: Duration) -> Outcome {
        let Some(reader) = self.reader.as_mut() else {
            return Outcome::Continue;
        };
        let readable = {
            let mut fds = [nix::poll::PollFd::new(
                reader.fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let mut mask = nix::sys::signal::SigSet::thread_get_mask()
                .unwrap_or_else(|_| nix::sys::signal::SigSet::empty());
            mask.remove(nix::sys::signal::Signal::SIGCHLD);
            let ts = nix::sys::time::TimeSpec::from_duration(timeout);
            matches!(nix::poll::ppoll(&mut fds, Some(ts), Some(mask)), Ok(n) if n > 0)
        };
        self.read_any = readable;
        if !readable {
            return Outcome::Continue;
        }
        let mut buf = [0u8; 4096];
        let n = match reader.read_some(&mut buf) {
            Ok(0) => return self.gone(Outcome::Detach),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Outcome::Continue,
            Err(_) => return self.gone(Outcome::Detach),
        };
        for &byte in &buf[..n] {
            let Some(unit) = self.framer.push(byte) else {
                continue;
            };
            match self.unit(unit) {
                Outcome::Continue => {}
                other => return self.gone(other),
            }
        }
        self.pump()
    }

    /// A byte or a whole packet from gdb: through [`wire::inbound`] to gdbstub, or answered
    /// here (a detach of one process).
    fn unit(&mut self, unit: Unit) -> Outcome {
        let (raw, body_len) = match unit {
            Unit::Byte(b) => return self.feed(b),
            Unit::Packet { raw, body_len } => (raw, body_len),
        };
        let body = &raw[1..1 + body_len];
        let tgids = self.target.tgids();
        let (action, current) = wire::inbound(body, &tgids);
        {
            let mut w = self.wire.borrow_mut();
            w.request = wire::request_of(body);
            if body.starts_with(b"qSupported") {
                w.exec_events = body
                    .split(|&b| b == b';' || b == b':')
                    .any(|f| f == b"exec-events+");
            }
            w.tgids = tgids;
        }
        if let Some(pid) = current {
            self.target.set_current(pid);
        }
        let bytes = match action {
            Action::Forward => raw.clone(),
            Action::Replace(b) => wire::frame(&b),
            Action::Detach(pid) => {
                let ack = if self.wire.borrow().no_ack { "" } else { "+" };
                let reply = [ack.as_bytes(), &wire::frame(b"OK")].concat();
                if let Some(r) = self.reader.as_mut()
                    && r.send(&reply).is_err()
                {
                    return Outcome::Detach;
                }
                self.target.detach_process(pid);
                return Outcome::Continue;
            }
        };
        for b in bytes {
            match self.feed(b) {
                Outcome::Continue => {}
                other => return other,
            }
        }
        if body == b"QStartNoAckMode" {
            self.wire.borrow_mut().no_ack = true;
        }
        Outcome::Continue
    }

    /// One byte from gdb through the state machine.
    fn feed(&mut self, byte: u8) -> Outcome {
        let Some(machine) = self.machine.take() else {
            return Outcome::Detach;
        };
        let t = &mut self.target;
        let was_running = matches!(machine, GdbStubStateMachine::Running(_));
        let next = match machine {
            GdbStubStateMachine::Idle(m) => m.incoming_data(t, byte),
            GdbStubStateMachine::Running(m) => m.incoming_data(t, byte),
            GdbStubStateMachine::CtrlCInterrupt(m) => {
                m.interrupt_handled(t, None::<MultiThreadStopReason<u64>>)
            }
            GdbStubStateMachine::Disconnected(m) => return disconnected(m.get_reason()),
        };
        let next = match next {
            Ok(GdbStubStateMachine::CtrlCInterrupt(m)) => {
                // Stopped already when idle: nothing to stop or report.
                if was_running {
                    t.ctrl_c();
                }
                m.interrupt_handled(t, None::<MultiThreadStopReason<u64>>)
            }
            other => other,
        };
        match next {
            Ok(GdbStubStateMachine::Disconnected(m)) => disconnected(m.get_reason()),
            Ok(m) => {
                self.machine = Some(m);
                Outcome::Continue
            }
            Err(e) => {
                eprintln!("sbx: gdb: {e}; the workload runs on without gdb");
                Outcome::Detach
            }
        }
    }

    /// Report the next due stop, if gdb waits for one and every thread is stopped.
    pub fn pump(&mut self) -> Outcome {
        if !matches!(self.machine, Some(GdbStubStateMachine::Running(_))) {
            return Outcome::Continue;
        }
        if self.target.stuck() {
            // What was to be reported went away with its thread: gdb's resume stands.
            self.target.resume_again();
            return Outcome::Continue;
        }
        let Some(report) = self.target.next_report() else {
            return Outcome::Continue;
        };
        self.report(report)
    }

    /// Send gdb, which waits for a stop, `report`.
    fn report(&mut self, report: target::Report) -> Outcome {
        let Some(GdbStubStateMachine::Running(mut m)) = self.machine.take() else {
            return Outcome::Continue;
        };
        if let Some(line) = report.console {
            let _ = m
                .borrow_conn()
                .write_all(&console_packet(&format!("sbx: violation: {line}\n")));
        }
        {
            let mut w = self.wire.borrow_mut();
            w.note = report.note;
            w.tgids = self.target.tgids();
        }
        match m.report_stop(&mut self.target, report.reason) {
            // One process ended: gdb goes on with the others (or none, until it lets go).
            Ok(GdbStubStateMachine::Disconnected(m))
                if matches!(
                    m.get_reason(),
                    DisconnectReason::TargetExited(_) | DisconnectReason::TargetTerminated(_)
                ) =>
            {
                self.machine = Some(m.return_to_idle());
                Outcome::Continue
            }
            Ok(GdbStubStateMachine::Disconnected(m)) => self.gone(disconnected(m.get_reason())),
            Ok(m) => {
                self.machine = Some(m);
                Outcome::Continue
            }
            Err(_) => self.gone(Outcome::Detach),
        }
    }

    /// The whole tree is gone: what is due goes to gdb (each process's exit as gdb resumes
    /// the next), or, if gdb waits with nothing due, how the first program ended; then answer
    /// gdb until it lets go (a second without a word from it).
    pub fn finish(&mut self, status: ExitStatus) {
        if self.machine.is_none() {
            return;
        }
        self.pump();
        if matches!(self.machine, Some(GdbStubStateMachine::Running(_)))
            && !self.target.has_events()
        {
            let _ = self.report(target::Report {
                reason: target::exit_reply(status),
                console: None,
                note: Some(wire::Note::Process(self.target.root())),
            });
        }
        let mut heard = std::time::Instant::now();
        while self.machine.is_some() && heard.elapsed() < Duration::from_secs(1) {
            if self.poll(Duration::from_millis(200)) != Outcome::Continue {
                break;
            }
            if self.read_any {
                heard = std::time::Instant::now();
            }
        }
        self.machine = None;
        self.reader = None;
    }

    /// gdb is gone (`why`): drop the connection; on a detach, every held thread runs on.
    fn gone(&mut self, why: Outcome) -> Outcome {
        self.machine = None;
        self.reader = None;
        if why == Outcome::Detach {
            self.target.release_all();
        }
        why
    }
}

fn disconnected(reason: DisconnectReason) -> Outcome {
    match reason {
        DisconnectReason::Kill => Outcome::Kill,
        _ => Outcome::Detach,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_unix_paths_only() {
        assert!(matches!(parse_addr("127.0.0.1:2345"), Ok(Addr::Tcp(_))));
        assert!(matches!(parse_addr("[::1]:2345"), Ok(Addr::Tcp(_))));
        assert_eq!(
            parse_addr("./gdb.sock"),
            Ok(Addr::Unix(PathBuf::from("./gdb.sock")))
        );
        assert_eq!(
            parse_addr("/tmp/x:1"),
            Ok(Addr::Unix(PathBuf::from("/tmp/x:1")))
        );
        for bad in [
            "0.0.0.0:2345",
            "10.0.0.1:2345",
            "[::]:2345",
            "localhost:2345",
            "",
        ] {
            let e = parse_addr(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn console_packets_are_hex_with_checksum() {
        // "O" + hex("hi") = "O6869"; checksum of those bytes.
        let p = console_packet("hi");
        let sum = b"O6869".iter().fold(0u8, |a, &b| a.wrapping_add(b));
        assert_eq!(p, format!("$O6869#{sum:02x}").into_bytes());
    }
}
