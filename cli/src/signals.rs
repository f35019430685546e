//! The signals that stop `neardup index` cleanly (Ctrl-C, SIGTERM, SIGHUP, a closed stdout):
//! the indexing loop polls them, commits what it read and exits with 128 + the signal's number.

use super::eprintln_quiet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signal that asked the run to stop (0: none yet).
static STOP_SIGNAL: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// The signals that stop `neardup index` cleanly: what was read is committed, then the process
/// exits with 128 + the signal's number. SIGTERM is how containers, systemd and job schedulers
/// stop a program, SIGHUP how a closed terminal does: they must not lose more than Ctrl-C.
#[cfg(unix)]
const STOP_SIGNALS: [(i32, &str); 3] = [
    (signal_hook::consts::SIGINT, "SIGINT"),
    (signal_hook::consts::SIGTERM, "SIGTERM"),
    (signal_hook::consts::SIGHUP, "SIGHUP"),
];
#[cfg(not(unix))]
const STOP_SIGNALS: [(i32, &str); 1] = [(2, "SIGINT")];

/// Catches the stop signals from now on: the indexing loop sees the flag, commits and stops.
pub(crate) fn catch_interrupts() {
    STOP_SIGNAL.get_or_init(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        if let Err(e) = register_stop_signals(&flag) {
            eprintln_quiet(&format!(
                "warning: cannot catch Ctrl-C or SIGTERM ({e}); a stop signal will lose the \
                 documents read since the last commit"
            ));
        }
        flag
    });
}

#[cfg(unix)]
fn register_stop_signals(flag: &Arc<AtomicUsize>) -> std::io::Result<()> {
    for (signal, _) in STOP_SIGNALS {
        // The handler only stores the number (async-signal-safe); a later signal overwrites it.
        let number = usize::try_from(signal).unwrap_or(0);
        signal_hook::flag::register_usize(signal, flag.clone(), number)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn register_stop_signals(flag: &Arc<AtomicUsize>) -> std::io::Result<()> {
    let flag = flag.clone();
    ctrlc::set_handler(move || flag.store(2, Ordering::SeqCst)).map_err(std::io::Error::other)
}

/// A closed stdout (EPIPE; Rust ignores the signal itself) stops `index` like a stop signal:
/// what was read is committed, and the exit status is 128 + 13, as a shell reports a process
/// killed by SIGPIPE.
pub(crate) const SIGPIPE: (u8, &str) = (13, "SIGPIPE");

/// The stop signal received, if any: its number and name.
pub(crate) fn stop_signal() -> Option<(u8, &'static str)> {
    let number = STOP_SIGNAL.get()?.load(Ordering::SeqCst);
    if number == 0 {
        return None;
    }
    let name = STOP_SIGNALS
        .iter()
        .find(|(n, _)| usize::try_from(*n).ok() == Some(number))
        .map_or("a signal", |(_, name)| *name);
    Some((u8::try_from(number).unwrap_or(0), name))
}
