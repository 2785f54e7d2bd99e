//! `latprobe`: the thin shell over the library. It parses the command line,
//! runs it, and turns an error into one `Error:` line and a stable exit code
//! (see `latprobe --help`).

use std::process::ExitCode;

use clap::Parser as _;
use latprobe::cli::Cli;
use latprobe::exit;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_exit(err),
    };
    latprobe::out::set_quiet(cli.quiet);
    match latprobe::cli::dispatch(cli) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(err) => {
            // An error may quote what a probe or a file said (a refusal's
            // detail, a field): its control characters are escaped.
            latprobe::stderr_error!("Error: {}", latprobe::out::clean_lines(&format!("{err}")));
            ExitCode::from(exit_code(&err))
        }
    }
}

/// The exit code of an error, by its area: the one table of them. A
/// set-up that cannot work as given is 2 (retrying unchanged cannot
/// succeed), a run that failed on the way is 1, a broken limit is 3.
fn exit_code(err: &latprobe::Error) -> u8 {
    use latprobe::{Error, LinkError};
    match err {
        Error::Config(_)
        | Error::Input(_)
        | Error::Output(_)
        | Error::DebugProbe(_)
        | Error::Target(_)
        | Error::Import(_)
        | Error::Report(_) => exit::USAGE,
        Error::Link(link) => match link {
            LinkError::PortOpen { .. }
            | LinkError::VersionMismatch { .. }
            | LinkError::Refused { .. }
            | LinkError::Garbled { .. }
            | LinkError::NoHello { .. } => exit::USAGE,
            LinkError::Silent { .. } | LinkError::Probe { .. } | LinkError::Closed { .. } => exit::RUN_FAILED,
        },
        Error::Threshold(_) => exit::THRESHOLD,
        Error::Io { .. } | Error::Bug(_) => exit::RUN_FAILED,
    }
}

/// Help and version print as clap prints them; a usage mistake becomes the
/// same single `Error:` line as every other error, with exit code 2.
fn clap_exit(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            ExitCode::from(exit::OK)
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            ExitCode::from(exit::USAGE)
        }
        _ => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            let text = latprobe::cli::usage_error_text(&err, &args);
            latprobe::stderr_error!("Error: {text} (see --help)");
            ExitCode::from(exit::USAGE)
        }
    }
}
