//! Manual pages: one for each command, and a top page that names them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory};

use super::Cli;
use crate::cli::diagnostics::diagnostics;
use crate::render::outfile::Output;

/// `ratelimit man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, as in `ratelimit man replay` or `ratelimit man synth
    /// requests` [default: the top page, which names the others].
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Write every page to this directory, made if missing: ratelimit.1,
    /// ratelimit-replay.1, and so on; their names go to stderr.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

pub(super) fn run(args: &ManArgs) -> Result<ExitCode> {
    let top = pages_command();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
        // Every page, or none: a full disk leaves the pages there were, not some new ones.
        let mut files = Vec::new();
        for page in pages(&top) {
            let path = dir.join(man(page.clone()).get_filename());
            let mut text = Vec::new();
            man(page).render(&mut text)?;
            files.push((path, text));
        }
        crate::render::outfile::write_all(&files)?;
        for (path, _) in &files {
            // A note stderr cannot take is lost; the pages are written.
            let _ = writeln!(diagnostics(), "wrote {}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut page = top;
    for name in &args.command {
        let Some(sub) = page.find_subcommand(name).cloned() else {
            let known: Vec<&str> = page.get_subcommands().map(clap::Command::get_name).collect();
            bail!("no command `{name}` has a page; there are: {}", known.join(", "));
        };
        page = sub;
    }
    Output::Stdout.write(|out| man(page).render(out))?;
    Ok(ExitCode::SUCCESS)
}

/// Returns the page of `command`, whose footer names the program and its version.
fn man(command: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command).source(concat!("ratelimit ", env!("CARGO_PKG_VERSION")))
}

/// Returns the command line as its pages show it: built, so that each command knows its
/// full name (`ratelimit-synth-requests`), and without a `help` command, which has no page.
fn pages_command() -> clap::Command {
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    top
}

/// Returns the command and every command under it, each once, the top first.
fn pages(top: &clap::Command) -> Vec<clap::Command> {
    let mut all = vec![top.clone()];
    for sub in top.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        all.extend(pages(sub));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_page_names_only_pages_that_are_written() {
        let top = pages_command();
        let written: Vec<String> =
            pages(&top).iter().map(|p| man(p.clone()).get_filename()).collect();
        assert!(written.contains(&"ratelimit-replay.1".to_owned()), "{written:?}");
        assert!(written.contains(&"ratelimit-synth-requests.1".to_owned()), "{written:?}");
        let mut names = 0;
        for page in pages(&top) {
            let mut roff = Vec::new();
            man(page).render(&mut roff).unwrap();
            let roff = String::from_utf8(roff).unwrap();
            // Each named page, `ratelimit\-replay(1)` in roff, is one that is written.
            for named in roff.split(['\n', ' ']).filter(|w| w.ends_with("(1)")) {
                let file = named.replace("\\-", "-").replace("(1)", ".1");
                assert!(written.contains(&file), "{named} is named but not written");
                names += 1;
            }
        }
        // The top page names every command's page; synth names its requests'.
        assert_eq!(names, written.len() - 1);
    }
}
