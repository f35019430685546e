//! Locks that outlive a panic.

use std::sync::{Mutex, MutexGuard};

/// The guard of `m`, also after a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the protected data half-updated in a way
    // that matters more than losing the lock altogether: recover the guard.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
