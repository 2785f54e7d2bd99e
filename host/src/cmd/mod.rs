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

/// What the responder's set-up was refused (SCHED_FIFO, the CPU,
/// mlockall, cpu_dma_latency), from its metadata's `rt.warnings`: said on
/// the terminal when the run starts, not only in the JSON and HTML, since
/// the responder's own stderr is not the user's terminal.
pub(crate) fn responder_refusals(target: Option<&serde_json::Value>) -> Vec<String> {
    target
        .and_then(|t| t.pointer("/rt/warnings"))
        .and_then(serde_json::Value::as_array)
        .map(|w| w.iter().filter_map(|w| w.as_str()).map(|w| format!("the responder: {w}")).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_responders_refusals_are_read_from_its_metadata() {
        let t = serde_json::json!({ "rt": { "warnings": [
            "SCHED_FIFO priority 80 not applied: Operation not permitted (needs CAP_SYS_NICE)",
            "/dev/cpu_dma_latency not held: Permission denied"
        ] } });
        let w = super::responder_refusals(Some(&t));
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("the responder: SCHED_FIFO priority 80 not applied"), "{w:?}");
        assert!(super::responder_refusals(Some(&serde_json::json!({ "rt": {} }))).is_empty());
        assert!(super::responder_refusals(None).is_empty());
    }
}
