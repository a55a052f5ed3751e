//! Unified diffs of two rendered profiles (design.md section 9): after an enforce run, sbx
//! shows the profile against the profile learned from profile + observed violations, so a
//! reviewer sees exactly which lines the run would need.
//!
//! Pure: text in, text out. Uses `similar` (line diff, 3 lines of context, `---`/`+++`
//! headers). With `color`, removed lines are red, added lines green, hunk headers cyan and the
//! file headers bold (ANSI SGR codes, from anstyle); without it the output is plain `diff -u` text.

use anstyle::{AnsiColor, Style};
use similar::TextDiff;

const RED: Style = AnsiColor::Red.on_default();
const GREEN: Style = AnsiColor::Green.on_default();
const CYAN: Style = AnsiColor::Cyan.on_default();
const BOLD: Style = Style::new().bold();

/// A unified diff from `old` to `new` (empty when they are equal), with `old_name` and
/// `new_name` in the `---`/`+++` headers.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str, color: bool) -> String {
    let diff = TextDiff::from_lines(old, new);
    let plain = diff
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string();
    if !color {
        return plain;
    }
    let mut out = String::with_capacity(plain.len() + plain.len() / 4);
    for line in plain.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let code = if body.starts_with("---") || body.starts_with("+++") {
            Some(BOLD)
        } else if body.starts_with("@@") {
            Some(CYAN)
        } else if body.starts_with('-') {
            Some(RED)
        } else if body.starts_with('+') {
            Some(GREEN)
        } else {
            None
        };
        match code {
            Some(c) => out.push_str(&format!("{c}{body}{c:#}{nl}")),
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "include base\nread ${CWD}/a\nread ${CWD}/b\nwrite ${TMPDIR}/**\n";
    const NEW: &str = "include base\nread ${CWD}/a\nread ${CWD}/c\nwrite ${TMPDIR}/**\n";

    #[test]
    fn equal_texts_give_empty_diff() {
        assert_eq!(unified(OLD, OLD, "a", "b", false), "");
        assert_eq!(unified(OLD, OLD, "a", "b", true), "");
    }

    #[test]
    fn plain_diff_has_headers_hunk_and_changes() {
        let d = unified(OLD, NEW, "sbx.profile", "sbx.profile (learned)", false);
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "--- sbx.profile");
        assert_eq!(lines[1], "+++ sbx.profile (learned)");
        assert_eq!(lines[2], "@@ -1,4 +1,4 @@");
        assert!(lines.contains(&"-read ${CWD}/b"));
        assert!(lines.contains(&"+read ${CWD}/c"));
        assert!(lines.contains(&" include base"));
        assert!(!d.contains('\x1b'));
    }

    #[test]
    fn context_is_three_lines() {
        let old: String = (0..20).map(|i| format!("read /l{i}\n")).collect();
        let new = old.replace("read /l10\n", "read /x\n");
        let d = unified(&old, &new, "a", "b", false);
        // Lines 7..=13 (1-based 8..=14) appear: 3 before, 3 after the change.
        assert!(d.contains("@@ -8,7 +8,7 @@"), "{d}");
        assert!(d.contains(" read /l7\n") && d.contains(" read /l13\n"));
        assert!(!d.contains("/l6\n") && !d.contains("/l14\n"));
    }

    #[test]
    fn color_marks_removed_red_and_added_green() {
        let d = unified(OLD, NEW, "a", "b", true);
        assert!(d.contains("\x1b[31m-read ${CWD}/b\x1b[0m\n"), "{d:?}");
        assert!(d.contains("\x1b[32m+read ${CWD}/c\x1b[0m\n"), "{d:?}");
        assert!(d.contains("\x1b[1m--- a\x1b[0m\n"));
        assert!(d.contains(" include base\n"));
        // Stripping the codes gives the plain diff back.
        let stripped = anstream::adapter::strip_str(&d).to_string();
        assert_eq!(stripped, unified(OLD, NEW, "a", "b", false));
    }

    #[test]
    fn missing_final_newline_is_handled() {
        let d = unified("read /a", "read /b", "a", "b", false);
        assert!(d.contains("-read /a"));
        assert!(d.contains("+read /b"));
    }
}
