//! `pcieperf completions` and `pcieperf man`: shell completion scripts and man pages, generated
//! from the command-line definitions (clap_complete, clap_mangen) so they never drift from them.

use crate::error::CliError;
use crate::output::{check_dir, write_dir};
use crate::Cli;
use clap::{Args, CommandFactory, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: ShellName,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ShellName {
    Bash,
    Zsh,
    Fish,
}

impl From<ShellName> for clap_complete::Shell {
    fn from(s: ShellName) -> Self {
        match s {
            ShellName::Bash => clap_complete::Shell::Bash,
            ShellName::Zsh => clap_complete::Shell::Zsh,
            ShellName::Fish => clap_complete::Shell::Fish,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    pcieperf man | man -l -              the pcieperf(1) page, listing every command\n  \
    pcieperf man bench run               pcieperf-bench-run(1) (`bench-run` works too)\n  \
    pcieperf man --out-dir man/man1      every page, as files, for packaging")]
pub struct ManArgs {
    /// The command whose page to print, e.g. `bench run` or `bench-run`; none: pcieperf(1)
    #[arg(value_name = "COMMAND")]
    command: Vec<String>,
    /// Write every page (pcieperf.1, pcieperf-bench.1, pcieperf-bench-run.1, ...) into DIR,
    /// created if missing, instead, and print the paths written
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    out_dir: Option<PathBuf>,
}

/// The completion script for one shell.
pub fn completions(args: &CompletionsArgs) -> Result<String, CliError> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::from(args.shell),
        &mut cmd,
        "pcieperf",
        &mut script,
    );
    String::from_utf8(script).map_err(|e| CliError::Runtime(format!("completion script: {e}")))
}

/// One man page on stdout, or every page written to a directory.
pub fn man(args: &ManArgs) -> Result<String, CliError> {
    let pages = pages();
    if let Some(dir) = &args.out_dir {
        check_dir("--out-dir", dir)?;
        let mut files = Vec::new();
        let mut written = String::new();
        for page in &pages {
            let man = manual(page.clone());
            written.push_str(&format!("{}\n", dir.join(man.get_filename()).display()));
            files.push((man.get_filename(), roff(&man)?.into_bytes()));
        }
        write_dir(dir, &files)?;
        return Ok(written);
    }

    let wanted = page_name(&args.command);
    let page = pages.iter().find(|p| display_name(p) == wanted).ok_or_else(|| {
        let allowed: Vec<String> = pages.iter().skip(1).map(spoken_name).collect();
        CliError::Usage(format!(
            "man {}: no such command; must be one of: {} (or nothing, for pcieperf itself)",
            args.command.join(" "),
            allowed.join(", ")
        ))
    })?;
    roff(&manual(page.clone()))
}

/// The page as roff text.
fn roff(man: &clap_mangen::Man) -> Result<String, CliError> {
    let mut roff = Vec::new();
    man.render(&mut roff)
        .map_err(|e| CliError::Runtime(format!("man page: {e}")))?;
    String::from_utf8(roff).map_err(|e| CliError::Runtime(format!("man page: {e}")))
}

/// pcieperf and every command below it, parents first (pcieperf, pcieperf-bench,
/// pcieperf-bench-run, ...). Built, so each carries its page name (`pcieperf-bench-run`) and its
/// full usage (`pcieperf bench run`); `help` has no page.
fn pages() -> Vec<clap::Command> {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let mut pages = Vec::new();
    let mut stack = vec![root];
    while let Some(cmd) = stack.pop() {
        let mut subs: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
        subs.reverse(); // popped in declaration order
        pages.push(cmd);
        stack.extend(subs);
    }
    pages
}

fn manual(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd)
        .source(format!("pcieperf {}", env!("PCIEPERF_VERSION")))
        .manual("pcieperf manual")
}

/// `pcieperf-bench-run` for the command `bench run`.
fn display_name(cmd: &clap::Command) -> String {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name()).to_owned()
}

/// `bench run` for the page `pcieperf-bench-run`, as a user types it after `pcieperf man`.
fn spoken_name(cmd: &clap::Command) -> String {
    let bin = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    bin.strip_prefix("pcieperf ").unwrap_or(bin).to_owned()
}

/// The page the words after `pcieperf man` ask for: `bench run`, `bench-run` and
/// `pcieperf-bench-run` all name `pcieperf-bench-run`.
fn page_name(words: &[String]) -> String {
    let joined = words.iter().map(|w| w.trim()).collect::<Vec<_>>().join("-");
    let joined = joined.strip_prefix("pcieperf").unwrap_or(&joined);
    let joined = joined.trim_start_matches('-');
    if joined.is_empty() {
        "pcieperf".to_owned()
    } else {
        format!("pcieperf-{joined}")
    }
}
