//! What the scheduler writes where others read it: text for a terminal or
//! the journal (escaped, and never a panic when the reader is gone), the
//! `log` crate's records (this crate's warnings and its libraries') as such
//! lines, and the --stats-file report (replaced atomically, never through a
//! symlink).

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

/// Which `log` records reach stderr: a level for every target, and levels
/// of their own for some targets (a module path and those below it), as
/// RUST_LOG's directives say: `debug`, `scx_stats=off,info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFilter {
    default: log::LevelFilter,
    targets: Vec<(String, log::LevelFilter)>,
}

/// The level -v given @count times shows: warnings and errors, then info,
/// debug and trace.
fn verbosity_level(count: u8) -> log::LevelFilter {
    match count {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    }
}

impl LogFilter {
    /// The filter of -v given @verbose times, then RUST_LOG's @directives
    /// if any: its levels per target as given, its level for the rest only
    /// where it shows more than -v does. A bad directive is an error line.
    pub fn new(verbose: u8, directives: Option<&str>) -> Result<Self, String> {
        let mut filter = LogFilter {
            default: verbosity_level(verbose),
            targets: Vec::new(),
        };
        for directive in directives.unwrap_or("").split(',').map(str::trim) {
            if directive.is_empty() {
                continue;
            }
            let (target, level) = match directive.split_once('=') {
                Some((t, l)) => (Some(t.trim()), l.trim()),
                None => (None, directive),
            };
            let level: log::LevelFilter = level.parse().map_err(|_| {
                format!(
                    "RUST_LOG: \"{}\" is not a level (off, error, warn, info, debug, trace)",
                    escape(level)
                )
            })?;
            match target {
                Some("") => {
                    return Err(format!(
                        "RUST_LOG: \"{}\" names no target",
                        escape(directive)
                    ))
                }
                Some(t) => filter.targets.push((t.to_string(), level)),
                None => filter.default = Ord::max(filter.default, level),
            }
        }
        // the most specific target decides (longest module path first)
        filter
            .targets
            .sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        Ok(filter)
    }

    /// The level shown for records of @target.
    fn level_of(&self, target: &str) -> log::LevelFilter {
        self.targets
            .iter()
            .find(|(t, _)| {
                target
                    .strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
            })
            .map_or(self.default, |&(_, level)| level)
    }

    /// The most verbose level any target shows (log's global bound).
    fn max_level(&self) -> log::LevelFilter {
        self.targets
            .iter()
            .map(|&(_, level)| level)
            .fold(self.default, Ord::max)
    }
}

/// A `log` record as one stderr line: "scx_mosaic: " and, below warnings,
/// the level; another crate's records name their module; the message is
/// escaped (it may carry a cgroup's name or a kernel message). This
/// crate's warnings read as they always have: "scx_mosaic: <message>".
pub fn log_line(level: log::Level, target: &str, message: &str) -> String {
    let mut line = String::from("scx_mosaic: ");
    if level > log::Level::Warn {
        line.push_str(&level.as_str().to_ascii_lowercase());
        line.push_str(": ");
    }
    let ours = target
        .strip_prefix("scx_mosaic")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"));
    if !ours {
        line.push_str(&escape(target));
        line.push_str(": ");
    }
    line.push_str(&escape(message));
    line
}

/// The logger: records @filter lets through, to stderr (errln!'s way).
struct StderrLogger {
    filter: LogFilter,
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= self.filter.level_of(metadata.target())
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let line = log_line(record.level(), record.target(), &record.args().to_string());
            let _ = write_line(&mut std::io::stderr().lock(), &line);
        }
    }

    fn flush(&self) {}
}

/// Installs the process's logger with @filter (once: a second call fails).
pub fn init_logger(filter: LogFilter) -> Result<(), log::SetLoggerError> {
    let max = filter.max_level();
    log::set_logger(Box::leak(Box::new(StderrLogger { filter })))?;
    log::set_max_level(max);
    Ok(())
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
    fn v_and_rust_log_choose_the_levels() {
        use log::LevelFilter::*;
        let f = LogFilter::new(0, None).unwrap();
        assert_eq!(
            (f.level_of("scx_utils::compat"), f.max_level()),
            (Warn, Warn)
        );
        assert_eq!(LogFilter::new(1, None).unwrap().level_of("x"), Info);
        assert_eq!(LogFilter::new(2, None).unwrap().level_of("x"), Debug);
        assert_eq!(LogFilter::new(9, None).unwrap().level_of("x"), Trace);
        // RUST_LOG's level shows more than -v, never less
        assert_eq!(
            LogFilter::new(0, Some("debug")).unwrap().level_of("x"),
            Debug
        );
        assert_eq!(
            LogFilter::new(2, Some("error")).unwrap().level_of("x"),
            Debug
        );
        // per target: the longest matching module path decides, on :: boundaries
        let f = LogFilter::new(1, Some(" scx_stats=off, scx_stats::server=trace ,")).unwrap();
        assert_eq!(f.level_of("scx_stats::client"), Off);
        assert_eq!(f.level_of("scx_stats"), Off);
        assert_eq!(f.level_of("scx_stats::server"), Trace);
        assert_eq!(f.level_of("scx_stats_derive"), Info);
        assert_eq!(f.level_of("scx_utils"), Info);
        assert_eq!(f.max_level(), Trace);
        for bad in ["loud", "scx_utils=", "=debug", "a=b=c"] {
            let err = LogFilter::new(0, Some(bad)).unwrap_err();
            assert!(
                err.starts_with("RUST_LOG: ") && !err.contains('\n'),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn log_records_are_one_escaped_line_naming_a_foreign_module() {
        use log::Level::*;
        // this crate's warnings as errln! printed them before the logger
        assert_eq!(
            log_line(Warn, "scx_mosaic::group", "cgroups skipped"),
            "scx_mosaic: cgroups skipped"
        );
        assert_eq!(
            log_line(
                Warn,
                "scx_utils::compat",
                "kernel doesn't support ops.cgroup_set_idle()"
            ),
            "scx_mosaic: scx_utils::compat: kernel doesn't support ops.cgroup_set_idle()"
        );
        assert_eq!(
            log_line(Debug, "scx_mosaic", "a\nb\x1b[2J"),
            "scx_mosaic: debug: a\\nb\\x1b[2J"
        );
        assert_eq!(
            log_line(Info, "scx_mosaicky", "x"),
            "scx_mosaic: info: scx_mosaicky: x"
        );
    }

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
