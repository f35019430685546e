//! The directory a store's index is opened through: tantivy's memory-mapped directory, except
//! that reading an index does not need write access to it.
//!
//! A tantivy reader takes the meta lock while it opens segments (a writer's garbage collection
//! waits for it), and taking it creates or opens the lock file for writing: on a read-only
//! mount, or for a user who may not write the directory, every reader would fail. Here such a
//! failure falls back to locking the existing lock file opened for reading (`flock` needs no
//! write access, so a writer of another user is still kept waiting), or, when there is no lock
//! file, to no lock: no writer ever ran there, and none can start without write access.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// [`MmapDirectory`] whose blocking locks (the readers' meta lock) fall back as the module says
/// when the directory cannot be written.
#[derive(Clone, Debug)]
pub(super) struct IndexDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl IndexDirectory {
    /// Opens `dir`. Errors as [`MmapDirectory::open`] (missing, not a directory).
    pub(super) fn open(dir: &Path) -> Result<Self, OpenDirectoryError> {
        Ok(IndexDirectory {
            inner: MmapDirectory::open(dir)?,
            root: dir.to_path_buf(),
        })
    }
}

/// Whether `e` says that the file system or the permissions forbid writing.
fn cannot_write(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
    )
}

impl Directory for IndexDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        match self.inner.acquire_lock(lock) {
            Err(LockError::IoError(e)) if lock.is_blocking && cannot_write(&e) => {
                let path = self.root.join(&lock.filepath);
                match File::open(&path) {
                    Ok(file) => {
                        file.lock().map_err(LockError::wrap_io_error)?;
                        // Unlocked when the file is closed, with the returned lock.
                        Ok(DirectoryLock::from(Box::new(file)))
                    }
                    Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                        Ok(DirectoryLock::from(Box::new(())))
                    }
                    Err(_) => Err(LockError::IoError(e)),
                }
            }
            other => other,
        }
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
