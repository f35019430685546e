//! The creation claim of a store's directory: a file, locked by the process creating the index
//! for as long as it does, so that of two processes creating one index at once exactly one
//! does, and what a killed run left is found and cleared.

use crate::error::{Error, Result};
use std::fs::{File, TryLockError};
use std::path::Path;

/// The file a run creates (exclusively) in an empty directory before it creates the index
/// there, and removes once the index and its record exist: of two runs creating one index at
/// once, the second learns that the first is doing it.
const CREATING_FILE: &str = ".neardup-creating";

/// What the creation claim of a directory says.
pub(super) enum Claim {
    /// No run is creating an index there.
    Free,
    /// A live run holds the claim: it is creating the index now.
    Busy,
    /// The run that claimed the directory died before the index was complete; the claim is
    /// now held by this process (the file, locked).
    Stale(File),
}

/// Looks at the creation claim of `dir` ([`CREATING_FILE`], locked by the run creating the
/// index for as long as it does).
pub(super) fn inspect_claim(dir: &Path) -> Result<Claim> {
    let path = dir.join(CREATING_FILE);
    let file = match File::options().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Claim::Free),
        Err(e) => return Err(Error::Store(format!("cannot open {}: {e}", path.display()))),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(Claim::Busy),
        Err(TryLockError::Error(e)) => {
            return Err(Error::Store(format!("cannot lock {}: {e}", path.display())))
        }
    }
    // The creator removes the claim before it lets the lock go: a claim still there now was
    // left by a run that died.
    Ok(if path.exists() {
        Claim::Stale(file)
    } else {
        Claim::Free
    })
}

/// Whether `dir` holds the claim file of a run that is claiming it this very moment.
pub(super) fn being_claimed(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(CREATING_FILE))
    })
}

/// Removes the per-process claim files (`.neardup-creating.PID`) of runs that died between
/// making one and linking it into place: a live claimer holds its file's lock, so a file whose
/// lock can be taken is left over. Without this a run killed in that window would leave the
/// directory "being created" forever.
pub(super) fn clear_dead_claimers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{CREATING_FILE}.");
    for entry in entries.filter_map(|e| e.ok()) {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = File::options().read(true).write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() {
            // Best effort: if it cannot be removed, the "being created" message still applies.
            let _ = std::fs::remove_file(&path);
        }
    }
}

pub(super) fn being_created(dir: &Path) -> Error {
    Error::Store(format!(
        "{} is being created by another `neardup index` right now; wait for that run to \
         finish, then rerun this command",
        dir.display()
    ))
}

/// Claims an empty directory for creating an index: the claim file is made and locked under a
/// name of this process's own, then linked to [`CREATING_FILE`], which succeeds for exactly one
/// of several processes, and is locked from the moment it exists.
pub(super) fn claim(dir: &Path) -> Result<File> {
    let own = dir.join(format!("{CREATING_FILE}.{}", std::process::id()));
    let cannot = |e: std::io::Error| {
        Error::Store(format!(
            "cannot create {}: {e}",
            dir.join(CREATING_FILE).display()
        ))
    };
    // Another run's `clear_dead_claimers` may take our file for a dead run's in the instant
    // between its creation and its lock, and remove it: then the link finds no file, and we
    // make it again.
    let mut attempts = 0;
    let (file, linked) = loop {
        attempts += 1;
        let file = File::create(&own).map_err(cannot)?;
        file.lock().map_err(cannot)?;
        let linked = std::fs::hard_link(&own, dir.join(CREATING_FILE));
        match &linked {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 5 => continue,
            _ => {}
        }
        match std::fs::remove_file(&own) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(e)),
        }
        break (file, linked);
    };
    match linked {
        Ok(()) => Ok(file),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Store(format!(
            "{} was created by another process at the same time (another `neardup index` is \
             creating the index there); wait for that run to finish, then rerun this command \
             to add to the index",
            dir.display()
        ))),
        Err(e) => Err(cannot(e)),
    }
}

/// Removes what a run that died while creating an index left in `dir`: the directory was empty
/// when it was claimed, so everything in it but the claim is that run's.
pub(super) fn clear_stale_creation(dir: &Path) -> Result<()> {
    let clear = || -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name() == CREATING_FILE {
                continue;
            }
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
            } else {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    };
    clear().map_err(|e| {
        Error::Store(format!(
            "a run that was creating an index in {} died before it was complete, and what it \
             left cannot be removed ({e}); delete the directory and rerun",
            dir.display()
        ))
    })
}

/// Ends the creation: the claim is removed while still locked, then the lock is let go.
pub(super) fn release(dir: &Path, claim: File) -> Result<()> {
    std::fs::remove_file(dir.join(CREATING_FILE))?;
    drop(claim);
    Ok(())
}
