//! Where an output goes: stdout, a device written in place, or a file replaced whole.
//!
//! A regular file (or a path that does not exist yet) is written to a temporary file beside
//! it and renamed over it once complete, so that it appears whole or not at all. Anything
//! else — a device, a FIFO, a socket — is opened and written as it is, never replaced, and a
//! symbolic link is followed, so that its target is written and the link stays. A temporary
//! file is removed on an error, and on SIGINT, SIGTERM or SIGHUP (a closed terminal),
//! before the process exits with 130, 143 or 129; only SIGKILL, which no program can catch,
//! leaves one behind. A program that owns its signals itself (the Python package, whose
//! Ctrl-C is a `KeyboardInterrupt`) says so first ([`host_owns_signals`]).

#![warn(missing_docs)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

use anyhow::{Context, Result, anyhow, bail};

use ratelimit_input::message::io_reason;

/// An output option's value: `-` for standard output, or a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Standard output.
    Stdout,
    /// A path.
    Path(PathBuf),
}

impl Output {
    /// Reads an output option: `-` means standard output.
    pub fn new(path: PathBuf) -> Output {
        if path == Path::new("-") { Output::Stdout } else { Output::Path(path) }
    }

    /// Returns true for standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self, Output::Stdout)
    }

    /// Refuses to write over an input of the same run: the same file by device and inode,
    /// however it is named. Call it before anything is read.
    pub fn check_not_input(&self, input: Option<&Identity>, input_name: &str) -> Result<()> {
        let Some(input) = input else { return Ok(()) };
        let found = match self {
            Output::Stdout => Identity::of_stdout(),
            Output::Path(path) => fs::metadata(path).ok().as_ref().and_then(Identity::of),
        };
        match found {
            Some(out) if out == *input => bail!(
                "refusing to write {} over the input {input_name}: it is the same file",
                self.name()
            ),
            _ => Ok(()),
        }
    }

    /// Returns the name messages give the output.
    pub fn name(&self) -> String {
        match self {
            Output::Stdout => "<stdout>".into(),
            Output::Path(path) => path.display().to_string(),
        }
    }

    /// Writes the output with `write`: standard output as a stream, a file whole or not at
    /// all, a device or FIFO in place. The writer is not buffered: the writers of this
    /// program hand it whole pictures, or buffer their rows themselves.
    pub fn write(&self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
        match self {
            Output::Stdout => {
                let mut out = stdout();
                write(&mut out)?;
                out.flush()?;
                Ok(())
            }
            Output::Path(path) => write_path(path, write),
        }
    }
}

/// Returns standard output, locked, whose write errors say that it was standard output
/// that failed (a full disk under `> file`, say). They keep their kind, so that a reader
/// that went away (a broken pipe) is still told apart.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

/// Standard output, naming itself in its errors: see [`stdout`].
pub struct Stdout(io::StdoutLock<'static>);

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(named)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(named)
    }
}

/// Names standard output in a write's error, keeping its kind; a closed pipe and an
/// interrupted write, which callers handle by their kind, stay as they are.
fn named(err: io::Error) -> io::Error {
    match err.kind() {
        io::ErrorKind::BrokenPipe | io::ErrorKind::Interrupted => err,
        kind => io::Error::new(kind, format!("cannot write standard output: {}", io_reason(&err))),
    }
}

/// A regular file's identity: its device and inode. Only regular files have one here,
/// since only they can be read and then overwritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    /// Returns the identity of the file with this metadata, if it is a regular file.
    pub fn of(meta: &fs::Metadata) -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            meta.is_file().then(|| Identity { dev: meta.dev(), ino: meta.ino() })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// Returns the identity of what standard input reads, if it is a regular file.
    pub fn of_stdin() -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            Identity::of_fd(io::stdin().as_fd())
        }
        #[cfg(not(unix))]
        None
    }

    /// Returns the identity of what standard output writes, if it is a regular file.
    pub fn of_stdout() -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            Identity::of_fd(io::stdout().as_fd())
        }
        #[cfg(not(unix))]
        None
    }

    #[cfg(unix)]
    fn of_fd(fd: std::os::fd::BorrowedFd) -> Option<Identity> {
        let file = File::from(fd.try_clone_to_owned().ok()?);
        Identity::of(&file.metadata().ok()?)
    }
}

/// Writes every file of `files` (a path and its bytes) or none: each goes whole to a
/// temporary file beside its path, and only when all are written are they put in place.
/// A file that cannot be written (a full disk, say) is named, and nothing is changed.
pub fn write_all(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    let mut staged = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let target = follow_links(path)?;
        let existing = match fs::metadata(&target) {
            Ok(meta) if meta.is_file() => Some(meta),
            // A device or FIFO cannot take part in all or nothing: it is written in place.
            Ok(_) => bail!("cannot write {}: it is not a regular file", path.display()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => bail!("cannot write {}: {}", path.display(), io_reason(&e)),
        };
        // Should one fail, those staged before are dropped: removed, none put in place.
        staged.push(stage(path, &target, existing.as_ref(), |out| out.write_all(bytes))?);
    }
    staged.into_iter().try_for_each(Staged::place)
}

/// How many links to follow before giving up, as the kernel does (ELOOP).
const MAX_LINKS: usize = 40;

fn write_path(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let target = follow_links(path)?;
    match fs::metadata(&target) {
        Ok(meta) if meta.is_file() => replace(path, &target, Some(&meta), write),
        Ok(meta) if meta.is_dir() => bail!("cannot write {}: it is a directory", path.display()),
        // A device, FIFO or socket is written in place: replacing it would destroy it.
        Ok(_) => {
            let fail = || format!("cannot write {}", path.display());
            let mut file = OpenOptions::new().write(true).open(&target).with_context(fail)?;
            write(&mut file).with_context(fail)?;
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(path, &target, None, write),
        Err(e) => Err(anyhow!("cannot write {}: {e}", path.display())),
    }
}

/// Returns the path a chain of symbolic links ends at; it may not exist yet.
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&at)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                at = match at.parent() {
                    Some(dir) => dir.join(link),
                    None => link,
                };
            }
            _ => return Ok(at),
        }
    }
    bail!("cannot write {}: too many levels of symbolic links", path.display())
}

/// Writes `target` whole through a temporary file beside it. An existing file keeps its
/// permissions and, where allowed, its owner; one the user may not write is refused as `cp`
/// refuses it.
fn replace(
    name: &Path,
    target: &Path,
    existing: Option<&fs::Metadata>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    stage(name, target, existing, write)?.place()
}

/// A file written whole to a temporary file beside its target, not yet put in place; one
/// dropped before it is placed is removed, and no longer listed for a signal to remove.
struct Staged {
    temp: Option<tempfile::NamedTempFile>,
    target: PathBuf,
    name: PathBuf,
}

/// Writes what `write` writes, for `target` (named `name` in messages), to a temporary file
/// beside it, synced: see [`replace`].
fn stage(
    name: &Path,
    target: &Path,
    existing: Option<&fs::Metadata>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Staged> {
    let cannot_create = |e: io::Error| {
        anyhow!("cannot create regular file '{}': {}", name.display(), io_reason(&e))
    };
    if existing.is_some() {
        // Opening for writing neither truncates nor changes the file; it asks the kernel
        // whether this user may write it, root included.
        OpenOptions::new().write(true).open(target).map_err(cannot_create)?;
    }
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".ratelimit-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A new file gets what any new file gets: 0666 less the umask.
        let mode = existing.map_or(0o666, |m| m.permissions().mode() & 0o7777);
        builder.permissions(fs::Permissions::from_mode(mode));
    }
    // Made and listed under the lock, so that a signal finds every temporary file.
    let temp = {
        let mut temps = Temps::lock();
        let temp = builder.tempfile_in(dir).map_err(cannot_create)?;
        temps.add(temp.path());
        temp
    };
    let staged = Staged { temp: Some(temp), target: target.to_owned(), name: name.to_owned() };
    if let Some(temp) = &staged.temp {
        // The reason as cp gives it, without std's "(os error N)". Failed, the staged file
        // is dropped, and so removed.
        write_temp(temp.as_file(), existing, write)
            .map_err(|e| anyhow!("cannot write {}: {}", name.display(), io_reason(&e)))?;
    }
    Ok(staged)
}

impl Staged {
    /// Puts the file in place. The rename happens under the lock, so that a signal either
    /// removes the temporary file or finds it already in place.
    fn place(mut self) -> Result<()> {
        let Some(temp) = self.temp.take() else { return Ok(()) };
        let mut temps = Temps::lock();
        temps.remove(temp.path());
        let fail = || format!("cannot write {}", self.name.display());
        temp.persist(&self.target).map_err(|e| e.error).with_context(fail)?;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            Temps::lock().remove(temp.path());
        }
    }
}

fn write_temp(
    file: &File,
    existing: Option<&fs::Metadata>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    #[cfg(unix)]
    if let Some(meta) = existing {
        use std::os::unix::fs::MetadataExt;
        // Only root may give a file away; for anyone else the owner is already theirs.
        let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
    }
    let mut out = file;
    write(&mut out)?;
    // A full disk can let the writes through and fail only when the data reaches it: ask
    // now, so that no file is put in place with less than was written.
    file.sync_all()
}

/// The temporary files being written, which a signal must remove.
static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();

/// Whether the program that runs the commands owns the process's signals (the Python
/// package, whose Ctrl-C is a `KeyboardInterrupt`): then no watcher takes them, and a
/// temporary file is removed as on any other error.
static HOST_OWNS_SIGNALS: AtomicBool = AtomicBool::new(false);

/// Leaves the process's signals to the program that runs the commands, for good.
pub fn host_owns_signals() {
    HOST_OWNS_SIGNALS.store(true, Ordering::Relaxed);
}

struct Temps(MutexGuard<'static, Vec<PathBuf>>);

impl Temps {
    /// Locks the list, first starting the thread that removes its files on a signal.
    fn lock() -> Temps {
        if !HOST_OWNS_SIGNALS.load(Ordering::Relaxed) {
            SIGNALS.call_once(watch_signals);
        }
        Temps(TEMPS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    fn add(&mut self, path: &Path) {
        self.0.push(path.to_owned());
    }

    fn remove(&mut self, path: &Path) {
        self.0.retain(|p| p != path);
    }
}

/// On SIGINT, SIGTERM or SIGHUP, removes every temporary file and exits with 128 + the
/// signal.
fn watch_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // Without the watcher, a signal kills the process as it would anyway; only a temporary
    // file could be left, and that is what the README's caveat covers.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // The lock is never let go: no rename may follow.
            let temps = TEMPS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for path in temps.iter() {
                let _ = fs::remove_file(path);
            }
            std::process::exit(128 + signal);
        }
    });
}
