//! The multiprocess part of gdb's protocol that `gdbstub` 0.7 leaves out, done on the wire.
//!
//! gdbstub serves one process: every thread id it writes carries the same pid, and a detach
//! (`D;PID`) ends the whole session. gdb, with fork and exec events, keeps one inferior per
//! process and names threads `pPID.TID`. So sbx stands between the two, packet by packet:
//!
//! - **From gdb** ([`inbound`]): `D;PID` detaches that process only (sbx answers it itself);
//!   `Hg`/`Hc` and `vCont` naming a whole process (`pPID.-1`, `pPID.0`, `pPID`) are turned
//!   into that process's threads, which gdbstub can name; `Hg` also tells which process
//!   memory and breakpoint requests are for.
//! - **To gdb** ([`outbound`]): every `pPID.TID` gdbstub writes gets the thread's real process
//!   (stop replies, thread lists, `qC`); an exit reply gets `;process:PID`; a stop for an exec
//!   gets `exec:PATH`; `qSupported`'s answer offers exec events when gdb asked for them.
//!
//! Thread ids are unique on the machine, so a thread's process is a lookup ([`Wire::tgids`]).
//! Pure functions of bytes and that table: no ptrace here.

use std::collections::BTreeMap;

/// A stop reply's extra field, set just before the stop is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// `exec:HEX(path)`: the thread's process runs a new program.
    Exec(Vec<u8>),
    /// `;process:PID` after `W`/`X`: which process exited.
    Process(i32),
}

/// What the last packet from gdb asked, to know what its answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Request {
    #[default]
    Other,
    /// `qfThreadInfo`/`qsThreadInfo`: a list of thread ids.
    ThreadList,
    /// `qC`: `QC` and a thread id.
    CurrentThread,
    /// `qSupported`: the features.
    Supported,
}

/// State shared by the reading and the writing side.
#[derive(Debug, Default)]
pub struct Wire {
    /// Every thread gdb sees -> its process.
    pub tgids: BTreeMap<i32, i32>,
    pub request: Request,
    /// gdb said `exec-events+`.
    pub exec_events: bool,
    /// `QStartNoAckMode` went through: no `+` for the packets sbx answers itself.
    pub no_ack: bool,
    pub note: Option<Note>,
}

/// A thread id field: `-1` (all), `0` (any) or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    All,
    Any,
    Num(i32),
}

fn parse_id(s: &str) -> Option<Id> {
    match s {
        "-1" => Some(Id::All),
        "0" => Some(Id::Any),
        _ => i32::from_str_radix(s, 16)
            .ok()
            .filter(|&n| n > 0)
            .map(Id::Num),
    }
}

/// `pPID.TID`, `pPID` (all its threads) or `TID`: (pid, tid).
pub fn parse_ptid(s: &str) -> Option<(Option<Id>, Id)> {
    match s.strip_prefix('p') {
        Some(rest) => match rest.split_once('.') {
            Some((p, t)) => Some((Some(parse_id(p)?), parse_id(t)?)),
            None => Some((Some(parse_id(rest)?), Id::All)),
        },
        None => Some((None, parse_id(s)?)),
    }
}

fn ptid(pid: i32, tid: i32) -> String {
    format!("p{pid:x}.{tid:x}")
}

/// The threads of process `pid` gdb sees, lowest first.
fn threads_of(tgids: &BTreeMap<i32, i32>, pid: i32) -> impl Iterator<Item = i32> + '_ {
    tgids
        .iter()
        .filter(move |&(_, &p)| p == pid)
        .map(|(&t, _)| t)
}

/// What to do with a packet from gdb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Hand it to gdbstub as it came.
    Forward,
    /// Hand gdbstub this body instead.
    Replace(Vec<u8>),
    /// `D;PID`: answer `OK`, stop showing process PID to gdb and let it run.
    Detach(i32),
}

/// A packet body from gdb: what to do with it, and the process memory and breakpoint
/// requests are for from now on (an `Hg`).
pub fn inbound(body: &[u8], tgids: &BTreeMap<i32, i32>) -> (Action, Option<i32>) {
    let Ok(text) = std::str::from_utf8(body) else {
        return (Action::Forward, None);
    };
    if let Some(pid) = text.strip_prefix("D;") {
        return match i32::from_str_radix(pid, 16) {
            Ok(p) if p > 0 => (Action::Detach(p), None),
            _ => (Action::Forward, None),
        };
    }
    if let Some(rest) = text.strip_prefix("Hg") {
        return general_thread(rest, tgids);
    }
    if let Some(rest) = text.strip_prefix("Hc") {
        // A process's threads: any of them (gdb sends `c`/`s` only without vCont).
        let (a, _) = general_thread(rest, tgids);
        return match a {
            Action::Replace(b) => {
                let mut out = b"Hc".to_vec();
                out.extend_from_slice(&b[2..]);
                (Action::Replace(out), None)
            }
            a => (a, None),
        };
    }
    if let Some(rest) = text.strip_prefix("vCont;") {
        return (resume_actions(rest, tgids), None);
    }
    (Action::Forward, None)
}

/// `Hg` with `rest`: a whole process becomes its first thread; the process is the one
/// memory requests are for.
fn general_thread(rest: &str, tgids: &BTreeMap<i32, i32>) -> (Action, Option<i32>) {
    match parse_ptid(rest) {
        Some((Some(Id::Num(pid)), Id::All | Id::Any)) => match threads_of(tgids, pid).next() {
            Some(t) => (
                Action::Replace(format!("Hg{}", ptid(pid, t)).into_bytes()),
                Some(pid),
            ),
            None => (Action::Forward, None),
        },
        Some((_, Id::Num(t))) => (Action::Forward, tgids.get(&t).copied()),
        _ => (Action::Forward, None),
    }
}

/// `vCont`'s actions with every `pPID.-1` spelled out as that process's threads (gdbstub
/// takes a whole-process action for every thread of every process).
fn resume_actions(rest: &str, tgids: &BTreeMap<i32, i32>) -> Action {
    let mut out = String::from("vCont");
    let mut changed = false;
    for action in rest.split(';') {
        let expanded = action
            .split_once(':')
            .and_then(|(kind, id)| match parse_ptid(id)? {
                (Some(Id::Num(pid)), Id::All) => Some((kind, pid)),
                _ => None,
            });
        match expanded {
            Some((kind, pid)) => {
                changed = true;
                for t in threads_of(tgids, pid) {
                    out.push_str(&format!(";{kind}:{}", ptid(pid, t)));
                }
            }
            None => {
                out.push(';');
                out.push_str(action);
            }
        }
    }
    if !changed {
        return Action::Forward;
    }
    if out == "vCont" {
        // The process has no thread left (its end is due): nothing to resume. gdbstub needs
        // an action, and would take the request as is for every process: name a thread that
        // is not there, so that nothing is resumed and the due stop goes out.
        let pid = rest
            .split(';')
            .filter_map(|a| parse_ptid(a.split_once(':')?.1))
            .find_map(|(p, _)| match p {
                Some(Id::Num(p)) => Some(p),
                _ => None,
            })
            .unwrap_or(1);
        out.push_str(&format!(";c:{}", ptid(pid, pid)));
    }
    Action::Replace(out.into_bytes())
}

/// The kind of request a packet body from gdb is (what its answer will hold).
pub fn request_of(body: &[u8]) -> Request {
    if body.starts_with(b"qfThreadInfo") || body.starts_with(b"qsThreadInfo") {
        Request::ThreadList
    } else if body == b"qC" {
        Request::CurrentThread
    } else if body.starts_with(b"qSupported") {
        Request::Supported
    } else {
        Request::Other
    }
}

/// Thread id `s` (`pX.TID`) with TID's own process.
fn real_ptid(s: &str, tgids: &BTreeMap<i32, i32>) -> Option<String> {
    match parse_ptid(s)? {
        (Some(_), Id::Num(t)) => Some(ptid(*tgids.get(&t)?, t)),
        _ => None,
    }
}

/// A stop reply `T..` with real processes in its thread ids and the note's field.
fn stop_reply(text: &str, w: &mut Wire) -> Option<String> {
    let (head, fields) = text.split_at(3);
    let mut out = String::from(head);
    if let Some(Note::Exec(path)) = &w.note {
        out.push_str("exec:");
        for b in path {
            out.push_str(&format!("{b:02x}"));
        }
        out.push(';');
        w.note = None;
    }
    for field in fields.split(';').filter(|f| !f.is_empty()) {
        match field.split_once(':') {
            Some((k @ ("thread" | "fork" | "vfork"), v)) => {
                let v = real_ptid(v, &w.tgids).unwrap_or_else(|| v.to_string());
                out.push_str(&format!("{k}:{v};"));
            }
            _ => {
                out.push_str(field);
                out.push(';');
            }
        }
    }
    Some(out)
}

/// A packet body gdbstub wrote: the body gdb must get instead, if any.
pub fn outbound(body: &[u8], w: &mut Wire) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let hex2 = |s: &str| s.len() >= 3 && s.as_bytes()[1..3].iter().all(u8::is_ascii_hexdigit);
    let out = if text.starts_with('T') && hex2(text) {
        stop_reply(text, w)?
    } else if (text.starts_with('W') || text.starts_with('X'))
        && text[1..].bytes().all(|b| b.is_ascii_hexdigit())
        && text.len() > 1
    {
        let Some(Note::Process(pid)) = w.note.take() else {
            return None;
        };
        format!("{text};process:{pid:x}")
    } else if w.request == Request::ThreadList && text.starts_with('m') {
        let ids: Vec<String> = text[1..]
            .split(',')
            .map(|id| real_ptid(id, &w.tgids).unwrap_or_else(|| id.to_string()))
            .collect();
        format!("m{}", ids.join(","))
    } else if w.request == Request::CurrentThread && text.starts_with("QC") {
        format!("QC{}", real_ptid(&text[2..], &w.tgids)?)
    } else if w.request == Request::Supported
        && w.exec_events
        && text.starts_with("PacketSize=")
        && !text.contains("exec-events")
    {
        format!("{text};exec-events+")
    } else {
        return None;
    };
    (out.as_bytes() != body).then(|| out.into_bytes())
}

/// `$BODY#CS` for a body that needs no escaping (ASCII without `$#}*`).
pub fn frame(body: &[u8]) -> Vec<u8> {
    let sum = body.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    let mut out = Vec::with_capacity(body.len() + 4);
    out.push(b'$');
    out.extend_from_slice(body);
    out.extend_from_slice(format!("#{sum:02x}").as_bytes());
    out
}

/// One unit of what gdb sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// `+`, `-`, Ctrl-C (0x03), or anything else outside a packet.
    Byte(u8),
    /// A whole packet: its raw bytes (`$...#CS`) and its body (escapes left as they are).
    Packet { raw: Vec<u8>, body_len: usize },
}

/// Cuts a byte stream into [`Unit`]s: a packet ends at the first `#` not escaped by `}`,
/// plus two checksum characters.
#[derive(Debug, Default)]
pub struct Framer {
    raw: Vec<u8>,
    /// In a packet: bytes of checksum still to come after `#` (None: still in the body).
    sum_left: Option<u8>,
    escaped: bool,
}

impl Framer {
    pub fn push(&mut self, b: u8) -> Option<Unit> {
        if self.raw.is_empty() {
            if b == b'$' {
                self.raw.push(b);
                return None;
            }
            return Some(Unit::Byte(b));
        }
        self.raw.push(b);
        match self.sum_left {
            None if self.escaped => self.escaped = false,
            None if b == b'}' => self.escaped = true,
            None if b == b'#' => self.sum_left = Some(2),
            None => {}
            Some(n) if n > 1 => self.sum_left = Some(n - 1),
            Some(_) => {
                let raw = std::mem::take(&mut self.raw);
                self.sum_left = None;
                let body_len = raw.len() - 4;
                return Some(Unit::Packet { raw, body_len });
            }
        }
        None
    }
}

/// Collects what gdbstub writes and lets each whole packet out through [`outbound`].
#[derive(Debug, Default)]
pub struct Outbox {
    framer: Framer,
}

impl Outbox {
    /// Take byte `b`; the bytes to send now.
    pub fn push(&mut self, b: u8, w: &mut Wire) -> Vec<u8> {
        match self.framer.push(b) {
            None => Vec::new(),
            Some(Unit::Byte(b)) => vec![b],
            Some(Unit::Packet { raw, body_len }) => match outbound(&raw[1..1 + body_len], w) {
                Some(body) => frame(&body),
                None => raw,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgids() -> BTreeMap<i32, i32> {
        // Process 0x10 with threads 0x10 and 0x11; its fork child 0x20.
        BTreeMap::from([(0x10, 0x10), (0x11, 0x10), (0x20, 0x20)])
    }

    fn wire() -> Wire {
        Wire {
            tgids: tgids(),
            ..Wire::default()
        }
    }

    #[test]
    fn thread_ids_parse_as_gdb_writes_them() {
        assert_eq!(
            parse_ptid("p10.11"),
            Some((Some(Id::Num(0x10)), Id::Num(0x11)))
        );
        assert_eq!(parse_ptid("p10.-1"), Some((Some(Id::Num(0x10)), Id::All)));
        assert_eq!(parse_ptid("p10"), Some((Some(Id::Num(0x10)), Id::All)));
        assert_eq!(parse_ptid("p10.0"), Some((Some(Id::Num(0x10)), Id::Any)));
        assert_eq!(parse_ptid("-1"), Some((None, Id::All)));
        assert_eq!(parse_ptid("1f"), Some((None, Id::Num(0x1f))));
        assert_eq!(parse_ptid("pzz.1"), None);
        assert_eq!(parse_ptid(""), None);
    }

    #[test]
    fn a_detach_of_one_process_is_sbxs() {
        assert_eq!(inbound(b"D;20", &tgids()).0, Action::Detach(0x20));
        // Without a process (gdb without multiprocess): gdbstub's whole detach.
        assert_eq!(inbound(b"D", &tgids()).0, Action::Forward);
        assert_eq!(inbound(b"D;zz", &tgids()).0, Action::Forward);
    }

    #[test]
    fn a_whole_process_becomes_its_threads() {
        let t = tgids();
        // Hg naming a process: its first thread, and that process for memory.
        assert_eq!(
            inbound(b"Hgp20.0", &t),
            (Action::Replace(b"Hgp20.20".to_vec()), Some(0x20))
        );
        assert_eq!(inbound(b"Hgp10.11", &t), (Action::Forward, Some(0x10)));
        assert_eq!(inbound(b"Hg0", &t), (Action::Forward, None));
        assert_eq!(
            inbound(b"Hcp10.-1", &t).0,
            Action::Replace(b"Hcp10.10".to_vec())
        );
        // vCont: first match wins, so a step named first stays first.
        assert_eq!(
            inbound(b"vCont;s:p10.11;c:p10.-1", &t).0,
            Action::Replace(b"vCont;s:p10.11;c:p10.10;c:p10.11".to_vec())
        );
        assert_eq!(
            inbound(b"vCont;c:p20.-1", &t).0,
            Action::Replace(b"vCont;c:p20.20".to_vec())
        );
        // A process with no thread left: nothing to resume (not every process).
        assert_eq!(
            inbound(b"vCont;c:p30.-1", &t).0,
            Action::Replace(b"vCont;c:p30.30".to_vec())
        );
        assert_eq!(inbound(b"vCont;c", &t).0, Action::Forward);
        assert_eq!(inbound(b"vCont;c:-1", &t).0, Action::Forward);
        assert_eq!(inbound(b"vCont;s:p10.11;c", &t).0, Action::Forward);
        assert_eq!(inbound(b"vCont?", &t).0, Action::Forward);
    }

    #[test]
    fn stop_replies_name_the_threads_real_process() {
        let mut w = wire();
        // gdbstub names one pid (the first process) for every thread.
        assert_eq!(
            outbound(b"T05thread:p10.20;swbreak:;", &mut w),
            Some(b"T05thread:p20.20;swbreak:;".to_vec())
        );
        assert_eq!(outbound(b"T05thread:p10.11;", &mut w), None);
        assert_eq!(
            outbound(b"T05thread:p10.10;fork:p10.20;", &mut w),
            Some(b"T05thread:p10.10;fork:p20.20;".to_vec())
        );
        // An exec: its field, once.
        w.note = Some(Note::Exec(b"/bin/x".to_vec()));
        assert_eq!(
            outbound(b"T05thread:p10.20;", &mut w),
            Some(b"T05exec:2f62696e2f78;thread:p20.20;".to_vec())
        );
        assert_eq!(w.note, None);
        // An exit names its process.
        w.note = Some(Note::Process(0x20));
        assert_eq!(outbound(b"W07", &mut w), Some(b"W07;process:20".to_vec()));
        assert_eq!(outbound(b"X09", &mut w), None, "the note is used once");
    }

    #[test]
    fn thread_lists_and_features_are_rewritten_only_as_answers() {
        let mut w = wire();
        w.request = Request::ThreadList;
        assert_eq!(
            outbound(b"mp10.10,p10.11,p10.20", &mut w),
            Some(b"mp10.10,p10.11,p20.20".to_vec())
        );
        // The same bytes as the answer to a memory read are left alone.
        w.request = Request::Other;
        assert_eq!(outbound(b"mp10.10,p10.20", &mut w), None);
        w.request = Request::CurrentThread;
        assert_eq!(outbound(b"QCp10.20", &mut w), Some(b"QCp20.20".to_vec()));
        w.request = Request::Supported;
        assert_eq!(outbound(b"PacketSize=1000;multiprocess+", &mut w), None);
        w.exec_events = true;
        assert_eq!(
            outbound(b"PacketSize=1000;multiprocess+", &mut w),
            Some(b"PacketSize=1000;multiprocess+;exec-events+".to_vec())
        );
        // An `OK` or an error is never touched.
        assert_eq!(outbound(b"OK", &mut w), None);
        assert_eq!(outbound(b"E01", &mut w), None);
    }

    #[test]
    fn packets_are_cut_at_the_unescaped_hash() {
        let mut f = Framer::default();
        let mut units = Vec::new();
        for &b in b"+$m}#00#aa\x03$qC#b4" {
            units.extend(f.push(b));
        }
        assert_eq!(
            units,
            vec![
                Unit::Byte(b'+'),
                Unit::Packet {
                    raw: b"$m}#00#aa".to_vec(),
                    body_len: 5
                },
                Unit::Byte(3),
                Unit::Packet {
                    raw: b"$qC#b4".to_vec(),
                    body_len: 2
                },
            ]
        );
    }

    #[test]
    fn the_outbox_lets_out_rewritten_packets_with_their_checksum() {
        let mut w = wire();
        let mut o = Outbox::default();
        let mut sent = Vec::new();
        for &b in frame(b"T05thread:p10.20;").iter() {
            sent.extend(o.push(b, &mut w));
        }
        assert_eq!(sent, frame(b"T05thread:p20.20;"));
        let sum = b"T05thread:p20.20;"
            .iter()
            .fold(0u8, |a, &b| a.wrapping_add(b));
        assert!(sent.ends_with(format!("#{sum:02x}").as_bytes()));
        // An ack goes out as it is.
        assert_eq!(o.push(b'+', &mut w), b"+".to_vec());
    }
}
