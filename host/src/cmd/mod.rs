//! The subcommands, one per file. The live path that `run`, `demo` and
//! `calibrate` share (request, progress, session, delivery of the outputs)
//! is [`crate::measure`]; the flag groups several subcommands take are
//! [`crate::options`].

pub mod calibrate;
pub mod campaign;
pub mod compare;
pub mod demo;
pub mod docs;
pub mod flash;
pub mod import;
pub mod list;
pub mod report;
pub mod run;
