//! The result store: every finished run kept on disk, so that rerunning or
//! extending a sweep (more seeds, another axis value) runs only what is
//! missing, and a sweep killed halfway resumes where it stopped (issue 16).
//!
//! A run is addressed by its scenario after the sweep's substitution (as
//! canonical TOML), its seed and the backend that ran it; it is *keyed* by
//! that address plus the meshbed version and [`MODEL_REVISION`]. One file
//! per address, `DIR/ab/abcd….cbor.sz` (CBOR in Snappy's framing format),
//! holds the run's [`SimReport`] with its key and provenance. A file whose key does not match this build (another
//! version or model revision) is stale: never reused, reported, run again
//! and replaced. A file that does not decode is reported and run again. The
//! git revision is recorded with each run but is not part of the key: a
//! commit that does not change the model must not invalidate results.
//!
//! Files are written whole to a temporary name and renamed into place, so a
//! sweep killed at any moment leaves only complete runs behind.

use meshbed_sim::{Scenario, SimReport};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The revision of the simulated model's results. Bump it (any new string;
/// by convention the date and a counter) in the same commit as any change
/// that changes what a run of some scenario reports: the radio, MAC,
/// routing or transport models, the scenario's defaults, the report's
/// fields. Every stored run keyed with the old revision is then stale and
/// runs again. A change that cannot alter a run's report (the CLI,
/// figures, CSV layout, summaries, documentation) leaves it alone: stored
/// runs stay valid across such commits.
pub const MODEL_REVISION: &str = "2026-12-04.2";

/// The meshbed version of this build (the workspace's package version).
pub const MESHBED_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git revision this build was made from, `-dirty` when tracked files
/// had uncommitted changes, `unknown` without git (see `build.rs`).
pub const GIT_REVISION: &str = env!("MESHBED_GIT_REVISION");

/// The layout of a stored file; a file of another layout is stale (it is
/// part of the key too). 2: each flow's result in parts (`transfer`, `udp`,
/// `routing`, `echo`) instead of one flat record.
const FORMAT: u32 = 2;

/// What built a run: recorded with each stored run and on every result row
/// (like SEM's commit pinning).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub meshbed_version: String,
    pub git_revision: String,
}

impl Provenance {
    /// This build's.
    pub fn this_build() -> Provenance {
        Provenance { meshbed_version: MESHBED_VERSION.into(), git_revision: GIT_REVISION.into() }
    }
}

/// One stored run, as written to its file.
#[derive(Serialize, Deserialize)]
struct StoredRun {
    format: u32,
    /// The SHA-256 of the address and the model's identity ([`Store::key`]).
    key: String,
    meshbed_version: String,
    model_revision: String,
    git_revision: String,
    runner: String,
    seed: u64,
    /// The scenario as keyed, for people who open the store.
    scenario_toml: String,
    report: SimReport,
    /// Each flow's echo RTTs, which the report keeps out of its JSON
    /// (`EchoResult::rtt_samples_s`) but the summaries pool over runs.
    echo_rtt_samples_s: Vec<Vec<f64>>,
}

/// What built a stored run: [`StoredRun`]'s first fields, which a file of
/// another layout still has (CBOR maps: the rest is skipped).
#[derive(Deserialize)]
struct StoredHeader {
    format: u32,
    key: String,
    meshbed_version: String,
    model_revision: String,
    git_revision: String,
}

impl StoredHeader {
    /// Of this build's layout and keyed as `key`.
    fn is_current(&self, key: &RunKey) -> bool {
        self.format == FORMAT && self.key == key.key
    }
}

impl StoredRun {
    fn header(&self) -> StoredHeader {
        StoredHeader {
            format: self.format,
            key: self.key.clone(),
            meshbed_version: self.meshbed_version.clone(),
            model_revision: self.model_revision.clone(),
            git_revision: self.git_revision.clone(),
        }
    }
}

/// A run claimed by this process ([`Store::claim`]). Dropped after the run
/// was kept (or failed): its file is removed, then its lock let go. Whoever
/// waited on it, or makes a new one from then on, finds the run kept when
/// it looks again, so removing it loses nothing and leaves no file behind.
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    _file: std::fs::File,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where one run lives in the store and what it must have been built by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunKey {
    /// SHA-256 (hex) of the backend, the scenario and its seed: the file's name.
    pub address: String,
    /// SHA-256 (hex) of the address, the meshbed version and the model revision.
    pub key: String,
    pub runner: String,
    pub seed: u64,
    pub scenario_toml: String,
}

/// What the store holds for a run.
#[derive(Debug)]
pub enum Lookup {
    /// A finished run of this build's model, and what built it.
    Hit(Box<SimReport>, Provenance),
    Missing,
    /// A run of another version, model revision or file layout: why.
    Stale(String),
    /// A file that cannot be read or decoded: why.
    Corrupt(String),
}

/// Why the store could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[error("result store {path}: {what}: {err}")]
pub struct StoreError {
    pub path: String,
    pub what: &'static str,
    pub err: std::io::Error,
}

/// A directory of finished runs.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
    meshbed_version: String,
    model_revision: String,
}

/// The largest stored run file, and what it may decompress to: far above
/// any run's report (a 300 s traced run is tens of MB), far below memory.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;
pub const MAX_DECODED_BYTES: u64 = 2 << 30;

/// Temporary files of this process get distinct names (several threads
/// may write the same run: two points with the same scenario).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl Store {
    /// The store in `dir`, created with its first run (so that an
    /// experiment refused before it runs leaves nothing behind).
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        if dir.exists() && !dir.is_dir() {
            return Err(StoreError {
                path: dir.display().to_string(),
                what: "opening",
                err: std::io::Error::other("expected a directory, found a file"),
            });
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            meshbed_version: MESHBED_VERSION.into(),
            model_revision: MODEL_REVISION.into(),
        })
    }

    /// The store as a build with another model revision sees it: what
    /// bumping [`MODEL_REVISION`] does (for tests).
    pub fn with_model_revision(mut self, model_revision: &str) -> Store {
        self.model_revision = model_revision.into();
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the store for one experiment run (`meshbed experiment run`):
    /// an advisory lock on `DIR/.lock`, held while the returned file lives.
    /// A second run on the same store calls `on_wait` and waits, then
    /// reuses what the first one kept instead of computing it again; the
    /// store's files are written whole and renamed, so even without the
    /// lock two writers never corrupt an entry.
    pub fn lock(&self, on_wait: impl FnOnce()) -> Result<std::fs::File, StoreError> {
        let path = self.dir.join(".lock");
        let fail = |what, err| StoreError { path: path.display().to_string(), what, err };
        std::fs::create_dir_all(&self.dir).map_err(|e| fail("creating the store for", e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| fail("opening the lock", e))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                on_wait();
                file.lock().map_err(|e| fail("waiting for the lock", e))?;
                Ok(file)
            }
            Err(std::fs::TryLockError::Error(e)) => Err(fail("taking the lock", e)),
        }
    }

    /// Claims the run of `key` for this process until the returned
    /// [`Claim`] is dropped: an advisory lock on `DIR/claims/ADDRESS`,
    /// waited for if another process (a second `experiment run`, a Python
    /// sweep's other worker) holds it. The caller then looks the run up
    /// again, since the other may have kept it meanwhile: two sweeps on one
    /// store share their runs one by one instead of both computing them.
    pub fn claim(&self, key: &RunKey) -> Result<Claim, StoreError> {
        let dir = self.dir.join("claims");
        let path = dir.join(&key.address);
        let fail = |what, err| StoreError { path: path.display().to_string(), what, err };
        std::fs::create_dir_all(&dir).map_err(|e| fail("creating the directory of", e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| fail("opening the claim", e))?;
        file.lock().map_err(|e| fail("waiting for the claim", e))?;
        Ok(Claim { path, _file: file })
    }

    /// The key of a run of `scenario` (its seed already the repetition's)
    /// on the backend `runner`.
    pub fn key(&self, runner: &str, scenario: &Scenario) -> RunKey {
        let scenario_toml = toml::to_string(scenario).expect("a scenario serialises to TOML");
        // Random flows already drawn into `flows` are not marked in the
        // TOML: their count is, so that such a scenario and one listing the
        // same flows by hand differ.
        let drawn = scenario.random_flows.as_ref().map_or(0, |r| r.drawn);
        let mut address = Sha256::new();
        address.update(format!("meshbed run\nrunner = {runner}\nrandom_flows_drawn = {drawn}\n").as_bytes());
        address.update(scenario_toml.as_bytes());
        let address = hex(&address.finalize());
        let mut key = Sha256::new();
        key.update(
            format!(
                "{address}\nmeshbed_version = {}\nmodel_revision = {}\nformat = {FORMAT}\n",
                self.meshbed_version, self.model_revision
            )
            .as_bytes(),
        );
        RunKey { address, key: hex(&key.finalize()), runner: runner.into(), seed: scenario.seed, scenario_toml }
    }

    /// The file of a run: `DIR/ab/abcd….cbor.sz` (256 subdirectories keep
    /// a store of a million runs listable).
    pub fn path(&self, key: &RunKey) -> PathBuf {
        self.dir.join(&key.address[..2]).join(format!("{}.cbor.sz", key.address))
    }

    /// What the store holds for `key`. Whatever sits at the entry's path,
    /// this never blocks, never reads without bound and never fails the
    /// experiment: an entry that is not a regular file, too large or
    /// unreadable is [`Lookup::Corrupt`], and its run runs again (issue 26).
    pub fn load(&self, key: &RunKey) -> Lookup {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(key);
        // Not following a link, and not waiting on a FIFO.
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Missing,
            Err(e) => return Lookup::Corrupt(format!("{}: cannot read: {e}", path.display())),
        };
        match file.metadata() {
            Ok(m) if m.is_file() && m.len() <= MAX_ENTRY_BYTES => {}
            Ok(m) if m.is_file() => {
                return Lookup::Corrupt(format!(
                    "{}: {} bytes, more than a stored run may have ({MAX_ENTRY_BYTES})",
                    path.display(),
                    m.len()
                ))
            }
            Ok(_) => return Lookup::Corrupt(format!("{}: not a regular file", path.display())),
            Err(e) => return Lookup::Corrupt(format!("{}: cannot read: {e}", path.display())),
        }
        let mut bytes = Vec::new();
        let decoder = snap::read::FrameDecoder::new(std::io::BufReader::new(file));
        if let Err(e) = decoder.take(MAX_DECODED_BYTES + 1).read_to_end(&mut bytes) {
            return Lookup::Corrupt(format!("{}: cannot decompress: {e}", path.display()));
        }
        if bytes.len() as u64 > MAX_DECODED_BYTES {
            return Lookup::Corrupt(format!(
                "{}: decompresses to more than a stored run may hold ({MAX_DECODED_BYTES} bytes)",
                path.display()
            ));
        }
        let stored: StoredRun = match ciborium::from_reader(&bytes[..]) {
            Ok(s) => s,
            // A file of another layout need not decode as this one: its
            // header tells a stale run from a damaged file.
            Err(e) => match ciborium::from_reader::<StoredHeader, _>(&bytes[..]) {
                Ok(header) if !header.is_current(key) => return Lookup::Stale(self.stale_why(&path, &header)),
                _ => return Lookup::Corrupt(format!("{}: cannot decode: {e}", path.display())),
            },
        };
        let header = stored.header();
        if !header.is_current(key) {
            return Lookup::Stale(self.stale_why(&path, &header));
        }
        if stored.seed != key.seed || stored.report.flows.len() != stored.echo_rtt_samples_s.len() {
            return Lookup::Corrupt(format!(
                "{}: seed {} and {} flows with {} RTT lists: expected seed {} and one RTT list per flow",
                path.display(),
                stored.seed,
                stored.report.flows.len(),
                stored.echo_rtt_samples_s.len(),
                key.seed
            ));
        }
        let mut report = stored.report;
        for (flow, rtts) in report.flows.iter_mut().zip(stored.echo_rtt_samples_s) {
            if let Some(echo) = &mut flow.echo {
                echo.rtt_samples_s = rtts;
            }
        }
        Lookup::Hit(
            Box::new(report),
            Provenance { meshbed_version: stored.meshbed_version, git_revision: stored.git_revision },
        )
    }

    /// Why the run in `path`, built as `header` says, is not reused.
    fn stale_why(&self, path: &Path, header: &StoredHeader) -> String {
        format!(
            "{}: built by meshbed {} (model revision {}, git {}, file format {}); \
             expected meshbed {} model revision {} format {FORMAT}",
            path.display(),
            header.meshbed_version,
            header.model_revision,
            header.git_revision,
            header.format,
            self.meshbed_version,
            self.model_revision
        )
    }

    /// Keeps a finished run of this build under `key`: written whole to a
    /// temporary file, then renamed over any older one.
    pub fn save(&self, key: &RunKey, report: &SimReport) -> Result<(), StoreError> {
        let path = self.path(key);
        let fail = |what, err| StoreError { path: path.display().to_string(), what, err };
        let parent = path.parent().expect("a run's file is in a subdirectory");
        std::fs::create_dir_all(parent).map_err(|e| fail("creating the directory", e))?;
        let stored = StoredRun {
            format: FORMAT,
            key: key.key.clone(),
            meshbed_version: self.meshbed_version.clone(),
            model_revision: self.model_revision.clone(),
            git_revision: GIT_REVISION.into(),
            runner: key.runner.clone(),
            seed: key.seed,
            scenario_toml: key.scenario_toml.clone(),
            report: report.clone(),
            echo_rtt_samples_s: report
                .flows
                .iter()
                .map(|f| f.echo.as_ref().map_or_else(Vec::new, |e| e.rtt_samples_s.clone()))
                .collect(),
        };
        let temp = parent.join(format!(
            ".{}.{}.{}.tmp",
            key.address,
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut w = snap::write::FrameEncoder::new(std::io::BufWriter::new(std::fs::File::create(&temp)?));
            ciborium::into_writer(&stored, &mut w).map_err(|e| std::io::Error::other(e.to_string()))?;
            let buffered = w.into_inner().map_err(|e| e.into_error())?;
            buffered.into_inner().map_err(|e| e.into_error())?.sync_all()
        })();
        // Something that is not a file where the run goes (a directory, a
        // link, a FIFO): moved aside, kept, and the run stored in its place.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            let aside = parent.join(format!(
                "{}.displaced.{}.{}",
                key.address,
                std::process::id(),
                TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            if let Err(e) = std::fs::rename(&path, &aside) {
                let _ = std::fs::remove_file(&temp);
                return Err(fail("moving aside what is not a stored run at", e));
            }
        }
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, &path)) {
            let _ = std::fs::remove_file(&temp);
            return Err(fail("writing a finished run", e));
        }
        Ok(())
    }
}

/// What a run with a store did: runs executed and reused, stored runs
/// that could not be used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreTally {
    pub dir: PathBuf,
    pub executed: usize,
    pub reused: usize,
    /// Reused runs recorded with another git revision than this build's.
    pub reused_from_other_revisions: usize,
    /// Stored runs of another version or model revision (run again), why.
    pub stale: Vec<String>,
    /// Stored files that could not be read (run again), why.
    pub corrupt: Vec<String>,
    /// Finished runs that could not be kept (the experiment went on), why.
    #[serde(default)]
    pub unsaved: Vec<String>,
}

impl StoreTally {
    /// Adds the counts and reasons of `other` (one job's) to these.
    pub fn add(&mut self, other: StoreTally) {
        self.executed += other.executed;
        self.reused += other.reused;
        self.reused_from_other_revisions += other.reused_from_other_revisions;
        self.stale.extend(other.stale);
        self.corrupt.extend(other.corrupt);
        self.unsaved.extend(other.unsaved);
    }

    /// The reasons sorted: jobs finish in any order, and the report must
    /// not depend on which finished first.
    pub fn sorted(mut self) -> StoreTally {
        self.stale.sort();
        self.corrupt.sort();
        self.unsaved.sort();
        self
    }

    /// `N runs executed, M reused from the store (DIR)`, then what was
    /// stale or corrupt.
    pub fn summary_line(&self) -> String {
        let mut s =
            format!("{} runs executed, {} reused from the store ({})", self.executed, self.reused, self.dir.display());
        if self.reused_from_other_revisions > 0 {
            s.push_str(&format!(
                "; {} of the reused runs were recorded by other git revisions of the same model revision {MODEL_REVISION}",
                self.reused_from_other_revisions
            ));
        }
        for (what, list) in [
            ("stored runs stale (another version or model revision), run again", &self.stale),
            ("stored runs corrupt, run again", &self.corrupt),
            ("finished runs not kept in the store", &self.unsaved),
        ] {
            if !list.is_empty() {
                s.push_str(&format!("; {} {what}: {}", list.len(), list[0]));
                if list.len() > 1 {
                    s.push_str(&format!(" (and {} more)", list.len() - 1));
                }
            }
        }
        s
    }
}
