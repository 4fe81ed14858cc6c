//! The configuration file: a TOML table whose keys are the long flag names
//! (`shard-size = 2`, `no-shared-runq = true`; '_' works for '-').
//!
//! The file is never interpreted on its own: each key becomes a command-line
//! token (`--shard-size=2`, `--no-shared-runq`) placed before the real
//! arguments, and clap parses them all, so the file accepts exactly the flags
//! and their values, checked by the same parsers. Later occurrences override
//! earlier ones: a flag given on the command line wins over the file.

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, Command, CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toml::Value;

/// Read when no --config is given, if it exists.
pub const DEFAULT_PATH: &str = "/etc/scx_mosaic/config.toml";

/// Id of the --config argument, added to the derived command.
const CONFIG_ID: &str = "config";

/// The command of @T with --config added, repeated flags overriding.
pub fn command<T: CommandFactory>() -> Command {
    T::command().args_override_self(true).arg(
        Arg::new(CONFIG_ID)
            .long(CONFIG_ID)
            .value_name("PATH")
            .value_parser(clap::value_parser!(PathBuf))
            .help(format!(
                "Read options from this TOML file, keys being the long flag names \
                 (e.g. shard-size = 2, no-shared-runq = true); flags on the command \
                 line win. Default: {DEFAULT_PATH} if it exists"
            )),
    )
}

/// Parses the process's command line and configuration file into @T.
pub fn parse<T: CommandFactory + FromArgMatches>() -> Result<T, clap::Error> {
    parse_from(std::env::args_os(), Path::new(DEFAULT_PATH))
}

/// Parses @argv (program name first) and the configuration file it names,
/// else @default if that exists. Errors are clap errors whose first line
/// says what is wrong, naming the file and the key for the file's errors.
pub fn parse_from<T, I, S>(argv: I, default: &Path) -> Result<T, clap::Error>
where
    T: CommandFactory + FromArgMatches,
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let mut cmd = command::<T>();
    // the command line alone first: --help, --version and bad flags as usual
    let matches = cmd.clone().try_get_matches_from(&argv)?;
    let path = match matches.get_one::<PathBuf>(CONFIG_ID) {
        Some(p) => Some(p.clone()),
        None if default.exists() => Some(default.to_path_buf()),
        None => None,
    };
    let file_tokens = match &path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                cmd.error(
                    ErrorKind::Io,
                    format!("config file {}: {e}", path.display()),
                )
            })?;
            tokens(&cmd, path, &text).map_err(|msg| cmd.error(ErrorKind::InvalidValue, msg))?
        }
        None => Vec::new(),
    };
    let mut all = Vec::with_capacity(file_tokens.len() + argv.len());
    all.extend(argv.first().cloned());
    all.extend(file_tokens);
    all.extend(argv.into_iter().skip(1));
    let mut matches = cmd.try_get_matches_from_mut(all)?;
    T::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
}

/// The command-line tokens equivalent to configuration @text read from
/// @path, each checked by clap; or a one-line error naming the file and key.
pub fn tokens(cmd: &Command, path: &Path, text: &str) -> Result<Vec<OsString>, String> {
    let file = path.display();
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        format!("config file {file}{at}: {}", one_line(e.message()))
    })?;
    let bin = cmd.get_name().to_string();
    let mut seen: Vec<(String, &str)> = Vec::new();
    let mut out = Vec::new();
    for (key, value) in &table {
        let name = key.replace('_', "-");
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(name.as_str()))
            .filter(|a| a.get_id() != CONFIG_ID && !a.is_hide_set());
        let Some(arg) = arg else {
            return Err(format!(
                "config file {file}: unknown key {key:?} (keys are the long flag names)"
            ));
        };
        if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
            return Err(format!(
                "config file {file}: key {key:?} is given twice (also as {other:?})"
            ));
        }
        seen.push((name.clone(), key));
        let bad_type = |want: &str| {
            format!(
                "config file {file}: key {key:?}: expected {want}, found {}",
                type_name(value)
            )
        };
        let flag = format!("--{name}");
        let key_tokens: Vec<String> = match (arg.get_action(), value) {
            (ArgAction::SetTrue, Value::Boolean(b)) => [flag].into_iter().filter(|_| *b).collect(),
            (ArgAction::SetFalse, Value::Boolean(b)) => {
                [flag].into_iter().filter(|_| !*b).collect()
            }
            (ArgAction::SetTrue | ArgAction::SetFalse, _) => {
                return Err(bad_type("true or false"));
            }
            (ArgAction::Count, Value::Integer(n)) if (0..=255).contains(n) => {
                vec![flag; *n as usize]
            }
            (ArgAction::Count, _) => return Err(bad_type("a count from 0 to 255")),
            (ArgAction::Append, Value::Array(items)) => items
                .iter()
                .map(|v| scalar(v).map(|s| format!("{flag}={s}")))
                .collect::<Option<_>>()
                .ok_or_else(|| bad_type("strings or numbers"))?,
            (ArgAction::Set | ArgAction::Append, v) => match scalar(v) {
                Some(s) => vec![format!("{flag}={s}")],
                None => return Err(bad_type("a string or a number")),
            },
            _ => {
                return Err(format!(
                    "config file {file}: key {key:?} cannot be set in a config file"
                ))
            }
        };
        // the key on its own, through clap's own value parsers
        let argv = std::iter::once(bin.clone()).chain(key_tokens.iter().cloned());
        if let Err(e) = cmd.clone().try_get_matches_from(argv) {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid value");
            return Err(format!(
                "config file {file}: key {key:?}: {}",
                first.trim_start_matches("error: ")
            ));
        }
        out.extend(key_tokens.into_iter().map(OsString::from));
    }
    Ok(out)
}

/// A string or number as the text of a flag's value; None for other types.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// TOML's name for the type of @v, for error messages.
fn type_name(v: &Value) -> String {
    match v {
        Value::String(s) => format!("a string ({:?})", truncate(s)),
        Value::Integer(i) => format!("an integer ({i})"),
        Value::Float(f) => format!("a float ({f})"),
        Value::Boolean(b) => format!("a boolean ({b})"),
        Value::Datetime(_) => "a date".into(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

/// At most 40 characters of @s.
fn truncate(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// @s with line breaks folded into spaces.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Opts;
    use proptest::prelude::*;
    use std::io::Write;

    /// Writes @text to a temporary config file.
    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    /// Parses @args with the config file @text (via --config).
    fn parse_with(text: &str, args: &[&str]) -> Result<Opts, String> {
        let f = file(text);
        let path = f.path().to_str().unwrap();
        let argv = ["scx_mosaic", "--config", path]
            .into_iter()
            .chain(args.iter().copied());
        parse_from::<Opts, _, _>(argv, Path::new("/nonexistent")).map_err(|e| {
            let text = e.to_string();
            text.lines().next().unwrap_or("").to_string()
        })
    }

    fn cli(args: &[&str]) -> Opts {
        let argv = std::iter::once(&"scx_mosaic").chain(args);
        parse_from::<Opts, _, _>(argv, Path::new("/nonexistent")).unwrap()
    }

    #[test]
    fn file_options_are_flags() {
        let o = parse_with(
            "shard-size = 2\nno_shared_runq = true\ngb-partitions = \"0-3;4-7\"\n\
             stats = 0.5\nslice-us = 3000\nno-l2-locality = false\n",
            &[],
        )
        .unwrap();
        assert_eq!(o.shard_size, Some(2));
        assert!(o.no_shared_runq);
        assert!(!o.no_l2_locality);
        assert_eq!(o.gb_partitions.as_deref(), Some("0-3;4-7"));
        assert_eq!(o.stats, 0.5);
        assert_eq!(o.slice_us, 3000);
        assert_eq!(o.gb_period_ms, 200, "unset keys keep the flag's default");
    }

    #[test]
    fn command_line_wins() {
        let o = parse_with(
            "shard-size = 2\nstats = 5\nno-shared-runq = true",
            &["--shard-size", "4", "--no-shared-runq", "--stats=0"],
        )
        .unwrap();
        assert_eq!(o.shard_size, Some(4));
        assert_eq!(o.stats, 0.0);
        assert!(o.no_shared_runq);
    }

    #[test]
    fn default_file_is_read_only_without_config() {
        let f = file("shard-size = 3\n");
        let o: Opts = parse_from(["scx_mosaic"], f.path()).unwrap();
        assert_eq!(o.shard_size, Some(3));
        let empty = file("");
        let o: Opts = parse_from(
            ["scx_mosaic", "--config", empty.path().to_str().unwrap()],
            f.path(),
        )
        .unwrap();
        assert_eq!(o.shard_size, None);
        let o: Opts = parse_from(["scx_mosaic"], Path::new("/nonexistent")).unwrap();
        assert_eq!(o.shard_size, None);
    }

    #[test]
    fn bad_files_are_one_line_naming_file_and_key() {
        for (text, why) in [
            ("no-such-flag = 1", "unknown key \"no-such-flag\""),
            ("shard-size = \"two\"", "key \"shard-size\": invalid value"),
            ("shard-size = 0", "key \"shard-size\""),
            (
                "shard-size = true",
                "expected a string or a number, found a boolean",
            ),
            ("no-shared-runq = \"yes\"", "expected true or false"),
            ("no-shared-runq = 1", "expected true or false"),
            ("gb-partitions = [1, 2]", "found an array"),
            ("[shard-size]\nx = 1", "found a table"),
            ("stats = -1", "key \"stats\""),
            ("config = \"/etc/x\"", "unknown key \"config\""),
            ("help = true", "unknown key \"help\""),
            ("debug-drop-comm = \"x\"", "unknown key"),
            ("shard-size = 2\nshard_size = 3", "given twice"),
            ("shard-size = ", "(line 1)"),
            ("\n\nshard-size 2", "(line 3)"),
        ] {
            let err = parse_with(text, &[]).unwrap_err();
            assert!(err.contains("config file /"), "{text}: {err}");
            assert!(err.contains(why), "{text}: {err}");
        }
        let err = parse_from::<Opts, _, _>(
            ["scx_mosaic", "--config", "/nonexistent/mosaic.toml"],
            Path::new("/nonexistent"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("error: config file /nonexistent/mosaic.toml: No such file"),
            "{err}"
        );
    }

    #[test]
    fn help_and_version_come_before_the_file() {
        let err = parse_from::<Opts, _, _>(["scx_mosaic", "--version"], Path::new("/nonexistent"))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::DisplayVersion);
        assert!(err.to_string().contains(env!("CARGO_PKG_VERSION")));
        let help = command::<Opts>().render_long_help().to_string();
        assert!(help.contains("--config <PATH>") && help.contains(DEFAULT_PATH));
        assert!(help.contains("Examples:"));
    }

    /// Every line of packaging/config.toml parses, and so does each example
    /// option in it once uncommented.
    #[test]
    fn example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/config.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let cmd = command::<Opts>();
        assert_eq!(tokens(&cmd, &path, &text).unwrap(), Vec::<OsString>::new());
        let mut keys = 0;
        for line in text.lines() {
            let Some(option) = line.strip_prefix("# ").filter(|l| l.contains(" = ")) else {
                continue;
            };
            tokens(&cmd, &path, option).unwrap_or_else(|e| panic!("{option}: {e}"));
            keys += 1;
        }
        assert!(keys >= 10, "only {keys} example options");
    }

    /// A TOML line for an option, and the command-line token it stands for.
    fn option() -> impl Strategy<Value = (String, Option<String>)> {
        let line = |t: String, f: String| (t, Some(f));
        prop_oneof![
            (1u32..=512)
                .prop_map(move |n| line(format!("shard-size = {n}"), format!("--shard-size={n}"))),
            (100u64..=1_000_000)
                .prop_map(move |n| line(format!("slice_us = {n}"), format!("--slice-us={n}"))),
            (0u32..100).prop_map(move |n| line(format!("stats = {n}.5"), format!("--stats={n}.5"))),
            any::<bool>().prop_map(|b| (
                format!("no-shared-runq = {b}"),
                b.then(|| "--no-shared-runq".to_string())
            )),
            "[0-9;,-]{0,12}".prop_map(move |s| line(
                format!("gb-partitions = {s:?}"),
                format!("--gb-partitions={s}")
            )),
            (0u32..100_000)
                .prop_map(move |n| line(format!("timeout-ms = {n}"), format!("--timeout-ms={n}"))),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics_and_errors_are_one_line(text in "\\PC{0,80}") {
            if let Err(e) = tokens(&command::<Opts>(), Path::new("/c.toml"), &text) {
                prop_assert!(!e.is_empty() && !e.contains('\n'), "{e:?}");
            }
        }

        #[test]
        fn tomlish_text_never_panics_and_errors_are_one_line(
            lines in prop::collection::vec(
                ("[a-z_-]{1,16}", "[ =]{0,2}", "(\"[^\"\\\\]{0,8}\"|-?[0-9]{1,12}|true|false|[0-9.e+-]{1,8}|\\[\\]|\\{\\})"),
                0..6)
        ) {
            let text: String = lines.iter().map(|(k, eq, v)| format!("{k}{eq}{v}\n")).collect();
            if let Err(e) = tokens(&command::<Opts>(), Path::new("/c.toml"), &text) {
                prop_assert!(!e.is_empty() && !e.contains('\n'), "{e:?}");
            }
        }

        /// A file of valid options parses to the same options as the flags.
        #[test]
        fn file_equals_flags(opts in prop::collection::btree_map(0usize..6, option(), 0..6)) {
            // one entry per key: the map is keyed by the strategy branch
            let mut seen = std::collections::BTreeSet::new();
            let opts: Vec<_> = opts.into_values()
                .filter(|(t, _)| seen.insert(t.split(" = ").next().unwrap().replace('_', "-")))
                .collect();
            let text: String = opts.iter().map(|(t, _)| format!("{t}\n")).collect();
            let flags: Vec<&str> = opts.iter().filter_map(|(_, f)| f.as_deref()).collect();
            let from_file = parse_with(&text, &[]);
            let argv = std::iter::once("scx_mosaic").chain(flags.iter().copied());
            let from_flags = parse_from::<Opts, _, _>(argv, Path::new("/nonexistent"))
                .map_err(|e| e.to_string().lines().next().unwrap_or("").to_string());
            match (from_file, from_flags) {
                (Ok(a), Ok(b)) => prop_assert_eq!(format!("{a:?}"), format!("{b:?}")),
                (Err(a), Err(_)) => prop_assert!(!a.contains('\n')),
                (a, b) => prop_assert!(false, "file {a:?} vs flags {b:?}"),
            }
        }
    }

    #[test]
    fn flags_parse_as_before() {
        let o = cli(&["--shard-size", "8", "--no-prev-first"]);
        assert_eq!(o.shard_size, Some(8));
        assert!(o.no_prev_first);
    }
}
