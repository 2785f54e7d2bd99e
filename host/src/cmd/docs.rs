//! `latprobe completions SHELL` and `latprobe man [DIR]`: shell completion
//! scripts and man pages, generated at run time from the clap definition,
//! so they always match the flags of this very binary.

use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use crate::Error;

/// `latprobe completions` options.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (also elvish, powershell)
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

/// `latprobe man` options.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write latprobe.1 and latprobe-SUBCOMMAND.1 here (an existing directory) [default: latprobe.1 to stdout]
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Run `latprobe completions`: the script on stdout.
/// `cli` is the whole command line's definition.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> Result<(), crate::Error> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "latprobe", &mut script);
    write_stdout(&script)
}

/// The man pages: `latprobe.1`, then one per subcommand, each with its name and text.
/// `cmd` is the whole command line's definition, `version` latprobe's
/// version line.
pub fn pages(cmd: clap::Command, version: &'static str) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let render = |c: clap::Command, name: String| -> Result<(String, Vec<u8>), Error> {
        let mut page = Vec::new();
        clap_mangen::Man::new(c)
            .render(&mut page)
            .map_err(|e| Error::io(format!("cannot render the man page {name}"), e))?;
        Ok((name, page))
    };
    let mut out = vec![render(cmd.clone(), "latprobe.1".into())?];
    for sub in cmd.get_subcommands() {
        // clap names are `&'static str` (without its `string` feature): a
        // handful of short names, made once per `latprobe man`.
        let name: &'static str = Box::leak(format!("latprobe-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name).version(version);
        out.push(render(sub, format!("{name}.1"))?);
    }
    Ok(out)
}

/// Run `latprobe man`.
pub fn man(args: ManArgs, cmd: clap::Command, version: &'static str) -> Result<(), crate::Error> {
    let pages = pages(cmd, version)?;
    let Some(dir) = args.dir else {
        return write_stdout(&pages[0].1);
    };
    if !dir.is_dir() {
        return Err(Error::Output(format!(
            "man {}: no such directory: give an existing one (e.g. ~/.local/share/man/man1), or none for stdout",
            dir.display()
        ))
        );
    }
    for (name, page) in pages {
        let p = dir.join(name);
        crate::fsout::write(&p, &page).map_err(|e| Error::io(format!("cannot write {}", p.display()), e))?;
        crate::stderr_line!("latprobe: wrote {}", p.display());
    }
    Ok(())
}

/// `bytes` on stdout; a closed stdout is no error of ours (`| head`).
fn write_stdout(bytes: &[u8]) -> Result<(), crate::Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("cannot write to stdout", e)),
        _ => Ok(()),
    }
}
