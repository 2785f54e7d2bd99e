//! The command line: one subcommand per file in [`crate::cmd`] (its shared
//! option groups, in [`crate::options`], flattened in), and the
//! dispatch to them: the top of the host, which nothing imports.

use clap::{Parser, Subcommand};

use crate::cmd;

const EXIT_CODES: &str = "Exit codes:\n  \
    0  ok (also a run ended early by Ctrl-C/SIGTERM: its report says complete: false)\n  \
    1  run failed: the probe faulted or fell silent, the link or a file failed (the report is still written)\n  \
    2  usage or set-up error: a bad flag, a missing port, a port where no probe says Hello, \
       a configuration the probe refuses, a probe of another protocol version\n  \
    3  a limit was violated (--max, --percentile, --max-timeouts, --max-lost, --max-late, --limits): \
       every output was written; 1 and 2 outrank it";

/// `latprobe --version` (and `-V`): the version, the git commit it was
/// built from (`-dirty` when it had changes, `unknown` outside git), the
/// protocol version it speaks, and whether probe-rs is built in.
pub fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        format!(
            "{} (commit {}, protocol {}, probe-rs: {})",
            env!("CARGO_PKG_VERSION"),
            env!("LATPROBE_GIT_COMMIT"),
            latprobe_protocol::PROTOCOL_VERSION,
            if cfg!(feature = "probe-rs") { "built in" } else { "not built in" }
        )
    })
}

/// latprobe: measure a Linux board's latency from the outside, with a probe's clock.
#[derive(Debug, Parser)]
#[command(name = "latprobe", version = version_line(), after_help = EXIT_CODES)]
pub struct Cli {
    /// Print nothing but errors (the files asked for are still written)
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure with a probe board: handshake, configure, collect, report
    Run(cmd::run::RunArgs),
    /// Rebuild the summary and every output from a JSON report or a raw file
    Report(cmd::report::ReportArgs),
    /// Measure this machine end to end with the virtual probe and a local responder
    Demo(cmd::demo::DemoArgs),
    /// Run a matrix of runs (loads, intervals, modes, repeats) from a plan, resumable, and set them side by side
    Campaign(cmd::campaign::CampaignArgs),
    /// Turn cyclictest or rtla timerlat results into latprobe documents (in-kernel self-measurements)
    Import(cmd::import::ImportArgs),
    /// Set runs side by side: latprobe reports, raw files, imported or cyclictest/rtla files
    Compare(cmd::compare::CompareArgs),
    /// Measure the probe's own offset and jitter on a line wired straight back, for run --calibration
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// List serial ports and debug probes, marking the ones that look like a latprobe board
    List(cmd::list::ListArgs),
    /// Flash the probe firmware through the board's debug probe, then check its Hello (or write a UF2 file for the Pico's BOOTSEL drive: --uf2)
    Flash(cmd::flash::FlashArgs),
    /// Print a shell completion script: `latprobe completions bash > /etc/bash_completion.d/latprobe`
    Completions(cmd::docs::CompletionsArgs),
    /// Write the man pages (latprobe.1 and one per subcommand) into DIR, or latprobe.1 to stdout
    Man(cmd::docs::ManArgs),
}

/// Units a duration flag takes, for telling `--duration 5 s` apart.
const UNITS: [&str; 7] = ["ns", "us", "µs", "ms", "s", "min", "h"];

/// The one line a usage mistake prints (after `Error: `): a value a flag's
/// parser refused is named as `--flag VALUE: why`, and a unit written
/// apart from its number (`--duration 5 s`) is shown written together.
/// `args` are the command line's arguments after the program name.
pub fn usage_error_text(err: &clap::Error, args: &[String]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if let Some(text) = flag_as_value(args) {
        return text;
    }
    let ctx = |k| match err.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match err.kind() {
        ErrorKind::ValueValidation => {
            let arg = ctx(ContextKind::InvalidArg);
            let value = ctx(ContextKind::InvalidValue);
            let why = std::error::Error::source(err).map(ToString::to_string);
            if let (Some(arg), Some(value), Some(why)) = (arg, value, why) {
                let flag = arg.split_whitespace().next().unwrap_or(&arg).to_string();
                let why = why.strip_prefix(&format!("'{value}' ")).unwrap_or(&why).to_string();
                return format!("{flag} {value}: {why}");
            }
        }
        ErrorKind::InvalidValue
            if args.first().is_some_and(|a| a == "demo")
                && ctx(ContextKind::InvalidArg).is_some_and(|a| a.starts_with("--mode"))
                && ctx(ContextKind::InvalidValue).is_some_and(|v| v == "gpio-echo" || v == "loopback") =>
        {
            let v = ctx(ContextKind::InvalidValue).unwrap_or_default();
            return format!(
                "--mode {v}: the demo measures uart-echo or periodic (--mode uart-echo, --mode periodic): \
                 this machine has no GPIO lines to wire; {v} needs a probe board (latprobe run)"
            );
        }
        ErrorKind::UnknownArgument => {
            if let Some(text) = ctx(ContextKind::InvalidArg).and_then(|stray| split_unit(&stray, args)) {
                return text;
            }
        }
        _ => {}
    }
    let rendered = err.render().to_string();
    let first: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let text = first.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

/// The flags that take a value with a minus sign (so that `-5ms` reaches
/// their parser): the next flag after one of them is taken for its value.
const HYPHEN_VALUED: [&str; 7] =
    ["--duration", "--interval", "--dither", "--timeout", "--guard", "--count", "--silence-timeout"];

/// `--duration --count 5`: a flag given no value, which took the next flag.
fn flag_as_value(args: &[String]) -> Option<String> {
    let w = args.windows(2).find(|w| HYPHEN_VALUED.contains(&w[0].as_str()) && w[1].starts_with("--"))?;
    let example = if w[0] == "--count" { "10000" } else { "10s" };
    Some(format!("{} needs a value before {}: give one, e.g. {} {example}", w[0], w[1], w[0]))
}

/// `--flag 5 s`: the stray unit `s` after a number that a flag took.
fn split_unit(stray: &str, args: &[String]) -> Option<String> {
    if !UNITS.contains(&stray) {
        return None;
    }
    let at = args.iter().position(|a| a == stray)?;
    let (flag, number) = (args.get(at.checked_sub(2)?)?, &args[at - 1]);
    let is_number = !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    (flag.starts_with("--") && is_number).then(|| {
        format!(
            "{flag} {number} {stray}: a duration is written without a space, the number and its unit \
             together: {flag} {number}{stray}"
        )
    })
}

/// A campaign run's command line as this latprobe reads it
/// ([`cmd::campaign::ReadArgs`]).
fn campaign_run_target(argv: &[String]) -> Result<Option<crate::options::TargetArgs>, String> {
    let cli = <Cli as clap::Parser>::try_parse_from(argv).map_err(|e| usage_error_text(&e, &argv[1..]))?;
    Ok(match cli.command {
        Command::Demo(a) => Some(a.target),
        Command::Run(a) => Some(a.target),
        _ => None,
    })
}

/// Run the parsed command line.
pub fn dispatch(cli: Cli) -> Result<(), crate::Error> {
    crate::signals::ignore_file_size_limit();
    match cli.command {
        Command::Run(args) => cmd::run::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Campaign(args) => cmd::campaign::run(args, campaign_run_target),
        Command::Import(args) => cmd::import::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Calibrate(args) => cmd::calibrate::run(args),
        Command::List(args) => cmd::list::run(args),
        Command::Flash(args) => cmd::flash::run(args),
        Command::Completions(args) => cmd::docs::completions(args, <Cli as clap::CommandFactory>::command()),
        Command::Man(args) => cmd::docs::man(args, <Cli as clap::CommandFactory>::command(), version_line()),
    }
}
