//! Which program a successful exec started, without reading `/proc/PID/exe`.
//!
//! The kernel runs a native ELF executable itself: the process's exe is then the very file the
//! execve named. A script (`#!`), a foreign ELF or any format a binfmt_misc handler claims runs
//! an interpreter instead, and the interpreter becomes the exe. [`Programs`] remembers per file
//! (device, inode, size, modification and change times) whether the kernel runs it itself, so a
//! workload that runs the same programs over and over pays one `statx` per exec. A readlink of
//! `/proc/PID/exe` (a new `/proc/PID` lookup for every new process) and the `statx` of the
//! set-id check cost more; see docs/performance.md.
//!
//! Only a sink that merely reports the exe may name the file (record): the path was read at
//! the execve's seccomp stop, before the exec ran. Enforce reads the kernel's answer, except
//! where no other task of the tree could run between its check and the kernel's walk of the
//! path (a shell's vfork child with its parent held: `Tracer::others_stopped`).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// What identifies a file's content well enough to trust a remembered verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    fn of(md: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }
}

/// A binfmt_misc handler (`/proc/sys/fs/binfmt_misc/NAME`), as far as matching goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    /// `offset N`, `magic HEX`, `mask HEX` (all ones when absent).
    Magic {
        offset: usize,
        magic: Vec<u8>,
        mask: Vec<u8>,
    },
    /// `extension EXT`: a file name ending in `.EXT`.
    Extension(Vec<u8>),
}

impl Handler {
    /// The handler of an enabled entry's text; `None` for a disabled or unreadable one.
    pub fn parse(text: &str) -> Option<Handler> {
        let mut lines = text.lines();
        if lines.next()? != "enabled" {
            return None;
        }
        let (mut offset, mut magic, mut mask) = (0, None, None);
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "extension" => {
                    let ext = value.strip_prefix('.').unwrap_or(value);
                    return Some(Handler::Extension(ext.as_bytes().to_vec()));
                }
                "offset" => offset = value.parse().ok()?,
                "magic" => magic = Some(hex(value)?),
                "mask" => mask = Some(hex(value)?),
                _ => {}
            }
        }
        let magic = magic?;
        let mask = mask.unwrap_or_else(|| vec![0xff; magic.len()]);
        Some(Handler::Magic {
            offset,
            magic,
            mask,
        })
    }

    /// Whether the kernel would hand this file to the handler: by the first bytes of its
    /// content (`head`), or by the name the execve gave it (`named`, as the kernel matches an
    /// extension: whatever follows the last `.` of the whole path).
    pub fn claims(&self, named: &[u8], head: &[u8]) -> bool {
        match self {
            Handler::Magic {
                offset,
                magic,
                mask,
            } => {
                let Some(bytes) = head.get(*offset..offset + magic.len()) else {
                    return false;
                };
                bytes
                    .iter()
                    .zip(magic)
                    .zip(mask.iter().chain(std::iter::repeat(&0xff)))
                    .all(|((b, m), k)| b & k == m & k)
            }
            Handler::Extension(ext) => named
                .iter()
                .rposition(|&b| b == b'.')
                .is_some_and(|i| named[i + 1..] == ext[..]),
        }
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The binfmt_misc handlers enabled now (none when binfmt_misc is not mounted: then the kernel
/// has none either, as its handlers live in the mount).
pub fn binfmt_handlers() -> Vec<Handler> {
    let Ok(dir) = std::fs::read_dir("/proc/sys/fs/binfmt_misc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| !matches!(e.file_name().to_str(), Some("register" | "status")))
        .filter_map(|e| Handler::parse(&std::fs::read_to_string(e.path()).ok()?))
        .collect()
}

/// Whether a file starting with `head` is a 64-bit little-endian ELF executable or shared
/// object (PIE) for `machine`: a program the kernel loads itself.
pub fn is_native_elf(head: &[u8], machine: u16) -> bool {
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    let u16_at = |i: usize| head.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    head.starts_with(b"\x7fELF")
        && head.get(4) == Some(&2) // ELFCLASS64
        && head.get(5) == Some(&1) // ELFDATA2LSB
        && matches!(u16_at(16), Some(ET_EXEC | ET_DYN))
        && u16_at(18) == Some(machine)
}

/// The kernel's verdicts on the programs seen so far (see the module documentation).
#[derive(Debug)]
pub struct Programs {
    machine: u16,
    handlers: Vec<Handler>,
    known: HashMap<Vec<u8>, (FileKey, bool)>,
}

/// Bound on remembered files (a workload exec'ing ever new files must not grow sbx).
const MAX_KNOWN: usize = 4096;
/// The kernel reads this much of a file to pick its format (BINPRM_BUF_SIZE).
const HEAD: usize = 256;

impl Programs {
    pub fn new(machine: u16, handlers: Vec<Handler>) -> Programs {
        Programs {
            machine,
            handlers,
            known: HashMap::new(),
        }
    }

    /// The mode of the file at `path` (absolute, no symlink in it) if the kernel runs it
    /// itself when an execve names it `named` (the path as given): a regular native ELF file
    /// that no binfmt_misc handler claims. `None` when it is anything else or cannot be
    /// looked at.
    pub fn native_binary(&mut self, path: &[u8], named: &[u8]) -> Option<u32> {
        let by_name = |h: &Handler| matches!(h, Handler::Extension(_)) && h.claims(named, b"");
        if self.handlers.iter().any(by_name) {
            return None;
        }
        let md = std::fs::symlink_metadata(OsStr::from_bytes(path)).ok()?;
        if !md.file_type().is_file() {
            return None;
        }
        let key = FileKey::of(&md);
        let native = match self.known.get(path) {
            Some(&(k, native)) if k == key => native,
            _ => {
                let native = self.judge(path, key);
                if self.known.len() >= MAX_KNOWN {
                    self.known.clear();
                }
                self.known.insert(path.to_vec(), (key, native));
                native
            }
        };
        native.then_some(md.mode())
    }

    /// Read the file's head and judge its content; false if it is not the file `key`
    /// describes (it changed between the two looks).
    fn judge(&self, path: &[u8], key: FileKey) -> bool {
        // Non-blocking and not through a symlink: a file swapped for a FIFO or a link since
        // the statx must not hang sbx or lead elsewhere.
        let Ok(mut f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
            .open(OsStr::from_bytes(path))
        else {
            return false;
        };
        if f.metadata().map(|m| FileKey::of(&m)).ok() != Some(key) {
            return false;
        }
        let mut head = [0u8; HEAD];
        let mut n = 0;
        while n < HEAD {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        let head = &head[..n];
        is_native_elf(head, self.machine) && !self.handlers.iter().any(|h| h.claims(b"", head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(class: u8, data: u8, etype: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = data;
        h[6] = 1; // EV_CURRENT
        h[16..18].copy_from_slice(&etype.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn only_64_bit_little_endian_programs_of_the_machine_are_native() {
        assert!(is_native_elf(&elf(2, 1, 2, 62), 62));
        assert!(is_native_elf(&elf(2, 1, 3, 62), 62), "PIE");
        assert!(!is_native_elf(&elf(2, 1, 3, 183), 62), "aarch64 on x86_64");
        assert!(!is_native_elf(&elf(1, 1, 2, 3), 62), "i386");
        assert!(!is_native_elf(&elf(2, 2, 2, 62), 62), "big-endian");
        assert!(!is_native_elf(&elf(2, 1, 1, 62), 62), "relocatable object");
        assert!(!is_native_elf(b"#!/bin/sh\n", 62));
        assert!(!is_native_elf(&elf(2, 1, 2, 62)[..19], 62), "cut short");
        assert!(!is_native_elf(b"", 62));
    }

    #[test]
    fn binfmt_misc_entries_parse_and_match_as_the_kernel_does() {
        // A qemu-user entry for aarch64 programs, as /proc/sys/fs/binfmt_misc shows it.
        let qemu = Handler::parse(
            "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POCF\n\
             offset 0\nmagic 7f454c460201010000000000000000000200b700\n\
             mask ffffffffffffff00fffffffffffffffffeffffff\n",
        )
        .unwrap();
        let arm = elf(2, 1, 2, 183);
        assert!(qemu.claims(b"/usr/bin/x", &arm));
        // The mask lets ET_DYN (3) through as ET_EXEC (2): byte 16 is masked with 0xfe.
        assert!(qemu.claims(b"/usr/bin/x", &elf(2, 1, 3, 183)));
        assert!(!qemu.claims(b"/usr/bin/x", &elf(2, 1, 2, 62)));
        assert!(!qemu.claims(b"/usr/bin/x", &arm[..10]), "head too short");
        let jar = Handler::parse("enabled\ninterpreter /usr/bin/jexec\nflags: \nextension .jar\n")
            .unwrap();
        assert!(jar.claims(b"/opt/app.jar", b""));
        assert!(jar.claims(b"./app.jar", b""));
        assert!(!jar.claims(b"/opt/app.jar.d/run", b""));
        assert!(!jar.claims(b"/opt/jar", b""));
        assert_eq!(Handler::parse("disabled\noffset 0\nmagic 7f\n"), None);
        assert_eq!(Handler::parse("enabled\noffset 0\nmagic 7g\n"), None);
        let no_mask = Handler::parse("enabled\noffset 2\nmagic 4c46\n").unwrap();
        assert!(no_mask.claims(b"/x", b"\x7fELF"));
        assert!(!no_mask.claims(b"/x", b"\x7fELG"));
    }

    #[test]
    fn a_file_is_judged_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prog");
        let p = path.as_os_str().as_bytes();
        let mut progs = Programs::new(62, Vec::new());
        std::fs::write(&path, elf(2, 1, 3, 62)).unwrap();
        assert!(progs.native_binary(p, p).is_some());
        // Rewritten in place as a script: same inode, other size and times.
        std::fs::write(&path, b"#!/bin/sh\nexit 0\n").unwrap();
        assert_eq!(progs.native_binary(p, p), None);
        std::fs::write(&path, elf(2, 1, 3, 62)).unwrap();
        assert!(progs.native_binary(p, p).is_some());
        // A handler claiming native programs (none does by default) wins over the kernel.
        let mut claimed = Programs::new(
            62,
            vec![Handler::parse("enabled\noffset 18\nmagic 3e00\n").unwrap()],
        );
        assert_eq!(claimed.native_binary(p, p), None);
        // ... and so does one claiming the name the execve gave (a symlink `x.jar` to it).
        let mut by_ext = Programs::new(62, vec![Handler::Extension(b"jar".to_vec())]);
        assert!(by_ext.native_binary(p, p).is_some());
        assert_eq!(by_ext.native_binary(p, b"./x.jar"), None);
        // Symlinks, directories and missing files are never judged native.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(
            progs.native_binary(link.as_os_str().as_bytes(), b"link"),
            None
        );
        assert_eq!(
            progs.native_binary(dir.path().as_os_str().as_bytes(), b"d"),
            None
        );
        assert_eq!(progs.native_binary(b"/nonexistent/prog", b"prog"), None);
    }
}
