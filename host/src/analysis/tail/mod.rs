//! The tail model: how rare the worst latencies are, from a
//! peaks-over-threshold fit of a generalized Pareto distribution (GPD),
//! and what that says about runs longer than the one measured.
//!
//! ```text
//!  run's worst samples (store, bounded) ─▶ candidate thresholds ─▶ decluster (runs)
//!       ─▶ GPD fit of cluster maxima (timeouts censored) ─▶ threshold rule
//!       ─▶ checks (fit, halves) ─▶ per-hour rates, levels, run lengths, horizon
//!            (each with a 95 % interval)  or  `refused` with the reason
//! ```
//!
//! | module | owns |
//! |---|---|
//! | `store` | [`TailStore`]: the run's [`store::TAIL_KEPT`] worst samples with sequence numbers and times; [`TailData`], their report form |
//! | `gpd` | the censored GPD likelihood, its maximum, the 1-D searches |
//! | `profile` | profile-likelihood intervals (shape, scale, return levels, survival) |
//! | `decluster` | runs declustering, the extremal index |
//! | `threshold` | the candidates and the threshold rule |
//! | `checks` | goodness of fit, the halves' stationarity |
//! | `predict` | rates per hour, levels, run lengths |
//! | `summary` | [`analyse`]: all of it into a [`TailReport`] |
//!
//! Everything here is a pure function of the run's counts, its duration,
//! its timeline and its kept worst samples, so `latprobe report` of a JSON
//! file computes the same model again, with other limits or `--horizon`.

// `!(x > 0.0)` is meant: it is also true for NaN, which must fail as a
// non-positive value does.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod checks;
mod decluster;
mod gpd;
mod predict;
mod profile;
mod store;
mod summary;
mod threshold;

pub use checks::{GpdDraw, SplitMix};
pub use decluster::{decluster, decluster_at, decluster_with, ferro_segers, Clusters, Exceedance};
pub use gpd::{fit, loglik, survival, Excesses, Mle, XI_MAX, XI_MIN};
pub use predict::Model;
pub use profile::{sigma_interval, xi_interval, Est, HALF_CHI2_95};
pub use store::{TailData, TailStore, TAIL_KEPT};
pub use summary::*;
pub use threshold::{MAX_EXCEEDANCES, MIN_CLUSTERS};

#[cfg(test)]
mod tests;
