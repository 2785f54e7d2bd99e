//! PLACEHOLDER until the plot branch is merged.
use std::path::{Path, PathBuf};
/// Placeholder.
pub fn write_all(_r: &super::Report, _d: &Path) -> Result<Vec<PathBuf>, crate::Error> {
    Err(crate::Error::Usage("plot: not merged yet".into()))
}
/// Placeholder.
pub fn histogram_svg(_r: &super::Report) -> Result<String, crate::Error> {
    Ok("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>".into())
}
/// Placeholder.
pub fn timeline_svg(_r: &super::Report) -> Result<Option<String>, crate::Error> {
    Ok(None)
}
/// Placeholder.
pub fn ccdf_svg(_r: &super::Report) -> Result<String, crate::Error> {
    Ok("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>".into())
}
