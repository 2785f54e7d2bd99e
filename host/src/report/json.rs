//! The JSON report (`--output FILE.json`); its schema is documented in
//! [`super`].

use std::path::Path;

use super::{Report, SCHEMA_VERSION};
use crate::Error;

/// `r` as pretty JSON.
pub fn to_string(r: &Report) -> String {
    // Serialising plain structs of numbers and strings cannot fail.
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

/// Write `r` to `path`.
pub fn write(r: &Report, path: &Path) -> Result<(), Error> {
    std::fs::write(path, to_string(r))
        .map_err(|e| Error::io(format!("cannot write the report {} (--output)", path.display()), e))
}

/// Read a report written by [`write()`].
pub fn read(path: &Path) -> Result<Report, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("cannot read the report {}", path.display()), e))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!("{} is neither a latprobe raw file nor a JSON report: {e}", path.display()))
    })?;
    let version = value.get("schema_version").and_then(serde_json::Value::as_u64);
    if version != Some(u64::from(SCHEMA_VERSION)) {
        return Err(Error::Usage(format!(
            "{} has schema_version {}, this latprobe reads version {SCHEMA_VERSION}",
            path.display(),
            version.map_or_else(|| "missing".to_string(), |v| v.to_string())
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| Error::Usage(format!("{} is not a latprobe report: {e}", path.display())))
}
