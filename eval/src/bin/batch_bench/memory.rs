//! The process's memory as /proc reports it: the peak resident and anonymous sizes, sampled during
//! a join.

use super::*;

pub(crate) fn read_status(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets the peak resident set to the current one (Linux >= 4.0); false if unsupported.
pub(crate) fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub(crate) fn peak_mb() -> f64 {
    read_status("VmHWM:").unwrap_or(0) as f64 / 1024.0
}

pub(crate) fn rss_mb() -> f64 {
    read_status("VmRSS:").unwrap_or(0) as f64 / 1024.0
}

/// The peak of the process's anonymous memory (not the memory-mapped index) while it runs:
/// a thread samples `RssAnon` every 2 ms.
pub(crate) struct AnonPeak {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) peak: Arc<AtomicU64>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

impl AnonPeak {
    pub(crate) fn start() -> AnonPeak {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(read_status("RssAnon:").unwrap_or(0)));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(kb) = read_status("RssAnon:") {
                    p.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        AnonPeak {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    /// The peak in bytes.
    pub(crate) fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed) * 1024
    }
}

pub(crate) fn anon_bytes() -> u64 {
    read_status("RssAnon:").unwrap_or(0) * 1024
}
