//! The kernel configurations of the columns side by side: only the
//! `CONFIG_` options that differ become rows (the seed-004 hunt through
//! `CONFIG_RCU_TRACE`, `CONFIG_NO_HZ`, `PREEMPT_RCU_BOOST` at a glance),
//! and one line says how many are the same.
//!
//! A column's configuration is the responder's metadata
//! (`target.kernel_config.options`: the options set; one it does not list
//! "is not set"). A column without one is left out of the comparison and
//! shows `n/a` on the rows.

use std::collections::{BTreeMap, BTreeSet};

use super::Column;

/// At most this many differing options are rows; the rest are counted.
pub const MAX_ROWS: usize = 60;

/// What an option the config does not list reads as.
pub const NOT_SET: &str = "not set";

/// The options of a report's `target` metadata, when it has them.
pub fn of_target(target: &serde_json::Value) -> Option<BTreeMap<String, String>> {
    let options = target.get("kernel_config")?.get("options")?.as_object()?;
    Some(
        options
            .iter()
            .filter(|(k, _)| k.starts_with("CONFIG_"))
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect(),
    )
}

/// The comparison: `(shared line, rows)`. The shared line is
/// `("kernel config", "…")` when at least two columns have a configuration;
/// each row is `(CONFIG_NAME, per column)`, `None` for a column without one.
#[allow(clippy::type_complexity)]
pub fn rows(columns: &[Column]) -> (Option<(String, String)>, Vec<(String, Vec<Option<String>>)>) {
    let known: Vec<&BTreeMap<String, String>> =
        columns.iter().filter_map(|c| c.kernel_config.as_ref()).collect();
    if known.len() < 2 {
        return (None, Vec::new());
    }
    let names: BTreeSet<&String> = known.iter().flat_map(|c| c.keys()).collect();
    let value = |c: &BTreeMap<String, String>, n: &str| c.get(n).map_or(NOT_SET, String::as_str).to_owned();
    let differing: Vec<&String> =
        names.iter().copied().filter(|n| known.iter().any(|c| value(c, n) != value(known[0], n))).collect();
    let same = names.len() - differing.len();
    let without = columns.len() - known.len();
    let mut line = match differing.len() {
        0 => format!("the same ({same} options set)"),
        1 => format!("1 option differs (rows CONFIG_…), {same} are the same"),
        d => format!("{d} options differ (rows CONFIG_…), {same} are the same"),
    };
    if differing.len() > MAX_ROWS {
        line.push_str(&format!("; the first {MAX_ROWS} by name are shown"));
    }
    if without > 0 {
        line.push_str(&format!(
            "; {without} column(s) carry no kernel config (latprobe-responder metadata has it)"
        ));
    }
    let rows = differing
        .into_iter()
        .take(MAX_ROWS)
        .map(|n| (n.clone(), columns.iter().map(|c| c.kernel_config.as_ref().map(|k| value(k, n))).collect()))
        .collect();
    (Some(("kernel config".to_owned(), line)), rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Figure;

    fn col(label: &str, config: Option<&[(&str, &str)]>) -> Column {
        Column {
            label: label.into(),
            source: "external probe".into(),
            mode: None,
            interval_ns: None,
            samples: 0,
            min: Figure::None,
            avg: Figure::None,
            avg_over: None,
            p50: Figure::None,
            p90: Figure::None,
            p99: Figure::None,
            p99_9: Figure::None,
            p99_99: Figure::None,
            max: Figure::None,
            timeouts_or_overflows: 0,
            lost: None,
            resolution_ns: 1,
            timeout_ns: None,
            meta: Vec::new(),
            loads: None,
            kernel_config: config.map(|c| c.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        }
    }

    #[test]
    fn only_the_options_that_differ_are_rows_and_an_absent_one_is_not_set() {
        let a = col("a", Some(&[("CONFIG_HZ", "1000"), ("CONFIG_NO_HZ_FULL", "y"), ("CONFIG_SMP", "y")]));
        let b = col("b", Some(&[("CONFIG_HZ", "250"), ("CONFIG_SMP", "y"), ("CONFIG_RCU_TRACE", "y")]));
        let c = col("c", None);
        let (line, rows) = rows(&[a, b, c]);
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["CONFIG_HZ", "CONFIG_NO_HZ_FULL", "CONFIG_RCU_TRACE"]);
        assert_eq!(rows[0].1, [Some("1000".into()), Some("250".into()), None]);
        assert_eq!(rows[1].1, [Some("y".into()), Some(NOT_SET.into()), None]);
        assert_eq!(rows[2].1, [Some(NOT_SET.into()), Some("y".into()), None]);
        let (k, v) = line.unwrap();
        assert_eq!(k, "kernel config");
        assert!(v.starts_with("3 options differ (rows CONFIG_…), 1 are the same"), "{v}");
        assert!(v.contains("1 column(s) carry no kernel config"), "{v}");
    }

    #[test]
    fn one_config_or_none_compares_nothing_and_equal_ones_say_so() {
        let a = || col("a", Some(&[("CONFIG_HZ", "1000")]));
        assert_eq!(rows(&[a(), col("b", None)]), (None, Vec::new()));
        let (line, r) = rows(&[a(), a()]);
        assert!(r.is_empty());
        assert_eq!(line.unwrap().1, "the same (1 options set)");
    }

    #[test]
    fn a_flood_of_differences_is_capped_and_counted() {
        let many: Vec<(String, String)> =
            (0..MAX_ROWS + 7).map(|i| (format!("CONFIG_X{i:03}"), "y".into())).collect();
        let refs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (line, r) = rows(&[col("a", Some(&refs)), col("b", Some(&[]))]);
        assert_eq!(r.len(), MAX_ROWS);
        assert!(line.unwrap().1.contains(&format!("{} options differ", MAX_ROWS + 7)));
    }
}
