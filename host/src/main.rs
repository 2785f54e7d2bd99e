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
            latprobe::tell_error!("Error: {}", latprobe::out::clean_lines(&format!("{err:#}")));
            let code =
                err.downcast_ref::<latprobe::Error>().map_or(exit::RUN_FAILED, latprobe::Error::exit_code);
            ExitCode::from(code)
        }
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
            latprobe::tell_error!("Error: {text} (see --help)");
            ExitCode::from(exit::USAGE)
        }
    }
}
