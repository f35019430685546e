//! [`RankKey`]: how the inner collector's sort keys compare, as tantivy's `TopDocs` ranks them.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cmp::Ordering;
use std::fmt::Debug;
use tantivy::Order;

/// A sort key the inner collector ranks hits by: the score (`f32`) or a fast field value
/// (`Option<u64>`, `Option<i64>`, `Option<f64>`, ...).
pub trait RankKey:
    Clone + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// `Less` when `self` ranks before `other` in `order`, as tantivy's `TopDocs` ranks them.
    /// Called once per hit comparison, so implementations should be a plain comparison
    /// (no allocation); it cannot fail: incomparable values (NaN) compare equal in the
    /// crate's implementations.
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering;
}

impl RankKey for f32 {
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering {
        let natural = self.partial_cmp(other).unwrap_or(Ordering::Equal);
        match order {
            Order::Desc => natural.reverse(),
            Order::Asc => natural,
        }
    }
}

impl<T> RankKey for Option<T>
where
    T: PartialOrd + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// `None` (no value) ranks last in both orders, as in `TopDocs::order_by_fast_field`.
    fn rank_cmp(&self, other: &Self, order: Order) -> Ordering {
        match (self, other) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(a), Some(b)) => {
                let natural = a.partial_cmp(b).unwrap_or(Ordering::Equal);
                match order {
                    Order::Desc => natural.reverse(),
                    Order::Asc => natural,
                }
            }
        }
    }
}
