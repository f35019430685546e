//! [`NearDupCollapse`]: one search result per near-duplicate group. The user-facing account (the
//! window, the fold, the guarantee, shards) is on [`NearDupCollapse`].

mod collector;
mod counts;
mod field;
mod merge;
mod rank;
mod result;
mod segment;
mod window;

pub use collector::{CollapseSegmentCollector, CollapseSegmentFruit, NearDupCollapse};
pub use field::GroupBy;
pub use merge::ShardStatistics;
pub use rank::RankKey;
pub use result::{Collapsed, CollapsedGroup, CollapsedHit};
