//! Everything that leaves the program: tables for people, CSV and JSON for programs, and the
//! options that name output files (written by `pcie-output`).

mod file;
mod table;
pub mod terminal;

pub use file::{check_dir, check_files, shown, write_dir, write_failed, write_file};
pub use table::{Cell, Table};

use clap::ValueEnum;

/// `--format`: a table for people (default), or CSV / JSON for programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
}

/// JSON text of a serialisable value (our types always serialise).
pub fn json<T: serde::Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("result types serialise to JSON");
    s.push('\n');
    s
}
