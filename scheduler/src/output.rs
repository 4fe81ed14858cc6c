//! What the scheduler writes where others read it: text for a terminal or
//! the journal (escaped, and never a panic when the reader is gone), and
//! the --stats-file report (replaced atomically, never through a symlink).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// Whether @c must not reach a terminal as is: C0 and C1 control
/// characters (ESC starts terminal sequences; CR and BS rewrite a line),
/// DEL, and the bidirectional overrides that reorder what a line shows.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// @s with every character that could steer a terminal or split a journal
/// line (a task's comm, a cgroup's name, a kernel message naming either)
/// written as an escape: `\x1b`, `\n`, `\u{202e}`. Borrowed when nothing
/// needs escaping.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if unsafe_char(c) && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Writes @line and a newline to @out; false once the reader has gone
/// (EPIPE: `| head`, a journal that stopped) or any other write error.
pub fn write_line(out: &mut impl Write, line: &str) -> bool {
    writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
}

/// println! that never panics: a closed stdout drops the line.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = $crate::output::write_line(&mut ::std::io::stdout().lock(), &format!($($arg)*));
    }};
}

/// eprintln! that never panics: a closed stderr drops the line.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        let _ = $crate::output::write_line(&mut ::std::io::stderr().lock(), &format!($($arg)*));
    }};
}

/// Replaces the file at @path with @contents as a whole: written to a new
/// file of the same directory (created exclusively, so never through a link
/// placed there), then renamed over @path. A symlink at @path is itself
/// replaced, its target untouched; a reader sees the old file or the new.
pub fn write_file_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?;
    let mut attempt = 0u32;
    let (tmp, mut file) = loop {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.{attempt}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1
            }
            Err(e) => return Err(e),
        }
    };
    let written = file
        .write_all(contents)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(escape("hackbench[42]"), Cow::Borrowed(_)));
        assert!(matches!(escape("a\\b c/d é"), Cow::Borrowed(_)));
        assert_eq!(
            escape("evil\x1b[2J\x1b]0;x\x07"),
            "evil\\x1b[2J\\x1b]0;x\\x07"
        );
        assert_eq!(escape("two\nlines\r\t"), "two\\nlines\\r\\t");
        assert_eq!(escape("del\x7f c1\u{9b}"), "del\\x7f c1\\x9b");
        assert_eq!(escape("rtl\u{202e}txt"), "rtl\\u{202e}txt");
        for s in ["\x1b", "x\u{0}y", "\u{85}", "\u{2066}"] {
            assert!(!escape(s).chars().any(unsafe_char), "{s:?}");
        }
    }

    #[test]
    fn a_closed_reader_ends_writing_without_a_panic() {
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(!write_line(&mut Gone, "line"));
        let mut v = Vec::new();
        assert!(write_line(&mut v, "line"));
        assert_eq!(v, b"line\n");
    }

    #[test]
    fn the_stats_file_replaces_a_symlink_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let path = dir.path().join("stats.json");
        symlink(&victim, &path).unwrap();
        write_file_atomic(&path, b"{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        // a dangling link is no way to create a file elsewhere either
        let elsewhere = dir.path().join("elsewhere");
        let path2 = dir.path().join("s2.json");
        symlink(&elsewhere, &path2).unwrap();
        write_file_atomic(&path2, b"x").unwrap();
        assert!(!elsewhere.exists());
        // nothing left behind but the two reports and the victim
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["s2.json", "stats.json", "victim"]);
    }

    #[test]
    fn an_existing_report_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "a much longer previous report\n").unwrap();
        write_file_atomic(&path, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        // a missing directory (/run/scx_mosaic after boot) is created
        write_file_atomic(&dir.path().join("run/scx_mosaic/s.json"), b"x").unwrap();
        assert!(write_file_atomic(&path.join("s.json"), b"x").is_err());
    }
}
