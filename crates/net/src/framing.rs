//! What a transfer's byte stream carries: a small header announcing the file
//! (name, size, SHA-256), then the file's bytes (docs/PROTOCOLS.md §6).
//!
//! The engines move one byte stream per connection and know nothing of files,
//! so the sender puts this in front:
//!
//! ```text
//! 0..4    magic "MBFX"
//! 4       version 1
//! 5       flags, 0 (anything else is refused)
//! 6..8    name length n, u16 big-endian, 1..=255
//! 8..8+n  file name, UTF-8, no path
//! +8      size in bytes, u64 big-endian
//! +32     SHA-256 of the file's bytes
//! then exactly `size` bytes of the file; the stream ends there.
//! ```
//!
//! [`Sink`] is the receiving end: it parses the header as it arrives,
//! writes the bytes to a temporary file whose name the receiver chooses
//! ([`temporary_name`]: `DIR/.meshbed-<16 random hex digits>.partial`,
//! created with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600, and locked with
//! `flock` while open), hashes them on the way and gives the file the name
//! `DIR/NAME` only when every byte is there and the hash matches, so a
//! partial file never has the final name. Nothing a peer sends (name,
//! connection id) goes into the temporary name, so no one can plant a link
//! where the receiver will write. A receiver that was killed leaves its
//! temporary file behind, unlocked; [`remove_stale_temporaries`] removes
//! such files when the next receiver starts (docs/PROTOCOLS.md §6).

use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub const MAGIC: [u8; 4] = *b"MBFX";
pub const VERSION: u8 = 1;
/// Bytes of the header before the name.
const FIXED_BEFORE_NAME: usize = 8;
/// Bytes after the name: size + SHA-256.
const FIXED_AFTER_NAME: usize = 8 + 32;
pub const MAX_NAME_LEN: usize = 255;

/// The file a stream announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamHeader {
    pub name: String,
    pub size: u64,
    pub sha256: [u8; 32],
}

/// Why a stream or a transfer's file was refused.
#[derive(Debug, Error)]
pub enum FramingError {
    #[error("the stream does not start with the transfer header (magic {0:02x?})")]
    BadMagic([u8; 4]),
    #[error("unsupported transfer header version {0}")]
    BadVersion(u8),
    #[error("unknown transfer header flags {0:#04x}")]
    BadFlags(u8),
    #[error("file name refused: {0}")]
    BadName(String),
    #[error("`{0}` already exists (use --overwrite to replace it)")]
    Exists(PathBuf),
    #[error("the stream carries more bytes than the announced {size}")]
    TooLong { size: u64 },
    #[error("the stream ended after {got} of {size} bytes")]
    TooShort { got: u64, size: u64 },
    #[error("SHA-256 mismatch: announced {announced}, received {received}")]
    HashMismatch { announced: String, received: String },
    #[error("`{0}` is not a regular file")]
    NotAFile(PathBuf),
    #[error("`{path}` changed while being sent: {expected} bytes announced, {got} read")]
    Changed { path: PathBuf, expected: u64, got: u64 },
    #[error("`{0}` was replaced by something else while the receiver wrote it; nothing was committed under its name")]
    Replaced(PathBuf),
    #[error("{what} `{path}`: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// What every receiver's temporary file name starts and ends with.
pub const TEMP_PREFIX: &str = ".meshbed-";
pub const TEMP_SUFFIX: &str = ".partial";

/// The temporary name for `random`: `.meshbed-<16 hex digits>.partial`
/// (33 bytes, far below any file system's name limit).
pub fn temporary_name(random: u64) -> String {
    format!("{TEMP_PREFIX}{random:016x}{TEMP_SUFFIX}")
}

/// Whether `name` is exactly a name [`temporary_name`] gives.
pub fn is_temporary_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.strip_suffix(TEMP_SUFFIX))
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Characters that change how a name is displayed without being seen: the
/// Unicode format characters (general category Cf, Unicode 15.1
/// `DerivedGeneralCategory.txt`: bidirectional embeddings, overrides and
/// isolates U+202A–202E and U+2066–2069, zero-width characters U+200B–200F,
/// U+2060, U+FEFF, the soft hyphen, invisible operators, tags …) and the
/// line and paragraph separators U+2028/2029. A name such as
/// `invoice\u{202E}fdp.exe` displays as `invoiceexe.pdf`.
fn is_invisible_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// Checks a file name announced by a peer: one plain path component that
/// displays as what it is.
pub fn check_name(name: &str) -> Result<(), FramingError> {
    let bad = |why: &str| Err(FramingError::BadName(format!("{name:?}: {why}")));
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return bad(&format!("must be 1 to {MAX_NAME_LEN} bytes, not {}", name.len()));
    }
    if name == "." || name == ".." {
        return bad("not a file name");
    }
    if name.contains(['/', '\\']) {
        return bad("contains a path separator");
    }
    if name.chars().any(|c| c.is_control()) {
        return bad("contains a control character");
    }
    if let Some(c) = name.chars().find(|&c| is_invisible_format(c)) {
        return bad(&format!(
            "contains the invisible formatting character U+{:04X} (bidirectional control, zero-width or other Unicode format character), which can disguise a name",
            u32::from(c)
        ));
    }
    if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
        return bad("looks like a receiver's temporary name");
    }
    Ok(())
}

impl StreamHeader {
    /// The header for `data` under `name` (hashes the data).
    pub fn for_data(name: &str, data: &[u8]) -> Result<Self, FramingError> {
        check_name(name)?;
        Ok(StreamHeader { name: name.to_string(), size: data.len() as u64, sha256: Sha256::digest(data).into() })
    }

    pub fn encoded_len(&self) -> usize {
        FIXED_BEFORE_NAME + self.name.len() + FIXED_AFTER_NAME
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        v.extend_from_slice(&MAGIC);
        v.push(VERSION);
        v.push(0);
        v.extend_from_slice(&(self.name.len() as u16).to_be_bytes());
        v.extend_from_slice(self.name.as_bytes());
        v.extend_from_slice(&self.size.to_be_bytes());
        v.extend_from_slice(&self.sha256);
        v
    }

    /// Parses a header from the start of `bytes`: `Ok(None)` if more bytes
    /// are needed, else the header and its length.
    pub fn decode(bytes: &[u8]) -> Result<Option<(StreamHeader, usize)>, FramingError> {
        if bytes.len() < FIXED_BEFORE_NAME {
            // Refuse a wrong magic as soon as it is visible.
            let n = bytes.len().min(4);
            if bytes[..n] != MAGIC[..n] {
                let mut m = [0u8; 4];
                m[..n].copy_from_slice(&bytes[..n]);
                return Err(FramingError::BadMagic(m));
            }
            return Ok(None);
        }
        let magic: [u8; 4] = bytes[0..4].try_into().expect("4 bytes");
        if magic != MAGIC {
            return Err(FramingError::BadMagic(magic));
        }
        if bytes[4] != VERSION {
            return Err(FramingError::BadVersion(bytes[4]));
        }
        if bytes[5] != 0 {
            return Err(FramingError::BadFlags(bytes[5]));
        }
        let name_len = u16::from_be_bytes([bytes[6], bytes[7]]) as usize;
        if name_len == 0 || name_len > MAX_NAME_LEN {
            return Err(FramingError::BadName(format!(
                "a name of {name_len} bytes: must be 1 to {MAX_NAME_LEN} bytes"
            )));
        }
        let total = FIXED_BEFORE_NAME + name_len + FIXED_AFTER_NAME;
        if bytes.len() < total {
            return Ok(None);
        }
        let name = std::str::from_utf8(&bytes[8..8 + name_len])
            .map_err(|_| FramingError::BadName("not UTF-8".into()))?
            .to_string();
        check_name(&name)?;
        let at = 8 + name_len;
        let size = u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let sha256: [u8; 32] = bytes[at + 8..at + 40].try_into().expect("32 bytes");
        Ok(Some((StreamHeader { name, size, sha256 }, total)))
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a receiver puts what arrives.
#[derive(Clone, Debug)]
pub enum SinkKind {
    /// Files in this directory (the normal case).
    Directory { dir: PathBuf, overwrite: bool },
    /// Count the bytes and keep nothing, not even the header's checks
    /// (benchmarks of the transport alone).
    Discard,
}

/// 64 unpredictable bits for a temporary name (from the kernel; the
/// standard library's per-process random hash keys if that fails). The
/// names need not be secret: `O_EXCL` already refuses any planted name.
fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    match File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)) {
        Ok(()) => u64::from_ne_bytes(b),
        Err(_) => {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
            );
            h.finish()
        }
    }
}

/// Whether `path` names the very file `file` is open on (no link followed).
fn names_file(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(at), Ok(ours)) => at.dev() == ours.dev() && at.ino() == ours.ino(),
        _ => false,
    }
}

/// A temporary file of this receiver: created exclusively under a fresh
/// random name, never through a link, and locked while it is open.
#[derive(Debug)]
struct TempFile {
    writer: std::io::BufWriter<File>,
    path: PathBuf,
}

impl TempFile {
    fn create(dir: &Path) -> std::io::Result<TempFile> {
        loop {
            let path = dir.join(temporary_name(random_u64()));
            let file = match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                other => other?,
            };
            // Blocking: a starting receiver's clean-up may hold the lock for
            // a moment, and if it removed the file meanwhile, start over.
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            if file.metadata()?.nlink() == 0 {
                continue;
            }
            return Ok(TempFile { writer: std::io::BufWriter::with_capacity(1 << 20, file), path });
        }
    }
}

/// The longest file name `dir`'s file system takes (255 where unknown).
fn name_max(dir: &Path) -> usize {
    rustix::fs::statvfs(dir).map_or(MAX_NAME_LEN, |v| v.f_namemax as usize).clamp(1, MAX_NAME_LEN)
}

/// Removes the temporary files in `dir` that no running receiver holds:
/// names exactly of the form [`temporary_name`] gives (which no peer can
/// send, [`check_name`]), regular files, and not locked — a receiver holds
/// the lock on each of its temporary files for as long as it has it open,
/// and the kernel drops the lock when the process ends, however it ends.
/// Returns the files removed. Resuming them is not possible: a new
/// connection starts its stream from the first byte.
pub fn remove_stale_temporaries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_name().to_str().is_some_and(is_temporary_name) {
            continue;
        }
        let path = entry.path();
        // O_NONBLOCK: a FIFO under such a name must not stall the start.
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a running receiver's
        }
        if names_file(&path, &file) && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

/// The state of one incoming stream.
#[derive(Debug)]
pub struct Sink {
    kind: SinkKind,
    /// Header bytes until the header is complete.
    pending: Vec<u8>,
    header: Option<StreamHeader>,
    file: Option<TempFile>,
    hasher: Sha256,
    written: u64,
    /// Bytes received on the stream in total (header included).
    stream_bytes: u64,
    committed: Option<PathBuf>,
    /// The SHA-256 of the bytes received, once all are here and it matched.
    verified_sha256: Option<[u8; 32]>,
}

impl Sink {
    pub fn new(kind: SinkKind) -> Self {
        Sink {
            kind,
            pending: Vec::new(),
            header: None,
            file: None,
            hasher: Sha256::new(),
            written: 0,
            stream_bytes: 0,
            committed: None,
            verified_sha256: None,
        }
    }

    pub fn header(&self) -> Option<&StreamHeader> {
        self.header.as_ref()
    }
    /// File bytes received so far.
    pub fn file_bytes(&self) -> u64 {
        self.written
    }
    pub fn stream_bytes(&self) -> u64 {
        self.stream_bytes
    }
    /// The final path, once committed.
    pub fn committed(&self) -> Option<&Path> {
        self.committed.as_deref()
    }
    /// The SHA-256 this receiver computed over the bytes it committed: the
    /// commit confirmation it sends back (docs/PROTOCOLS.md §6).
    pub fn verified_sha256(&self) -> Option<[u8; 32]> {
        self.verified_sha256
    }
    /// The temporary file, while one is open.
    pub fn temporary(&self) -> Option<&Path> {
        self.file.as_ref().map(|t| t.path.as_path())
    }
    /// Whether every announced byte is here (and, for files, committed).
    pub fn is_complete(&self) -> bool {
        match self.kind {
            SinkKind::Discard => false,
            SinkKind::Directory { .. } => self.committed.is_some(),
        }
    }

    /// Takes the next delivered bytes. Returns `Ok(true)` once the file is
    /// complete, verified and renamed to its final name.
    pub fn write(&mut self, bytes: &[u8]) -> Result<bool, FramingError> {
        self.stream_bytes += bytes.len() as u64;
        let (dir, overwrite) = match &self.kind {
            SinkKind::Discard => return Ok(false),
            SinkKind::Directory { dir, overwrite } => (dir.clone(), *overwrite),
        };
        if self.committed.is_some() {
            if bytes.is_empty() {
                return Ok(true);
            }
            return Err(FramingError::TooLong { size: self.written });
        }
        if self.header.is_none() {
            self.pending.extend_from_slice(bytes);
            let Some((header, used)) = StreamHeader::decode(&self.pending)? else {
                return Ok(false);
            };
            let limit = name_max(&dir);
            if header.name.len() > limit {
                return Err(FramingError::BadName(format!(
                    "{:?}: {} bytes, longer than the {limit} the file system of `{}` allows",
                    header.name,
                    header.name.len(),
                    dir.display()
                )));
            }
            let final_path = dir.join(&header.name);
            self.header = Some(header);
            // A link at the final name counts as existing, dangling or not.
            if !overwrite && std::fs::symlink_metadata(&final_path).is_ok() {
                return Err(FramingError::Exists(final_path));
            }
            let temp = TempFile::create(&dir).map_err(|source| FramingError::Io {
                what: "creating a temporary file in",
                path: dir.clone(),
                source,
            })?;
            self.file = Some(temp);
            let rest = self.pending.split_off(used);
            self.pending = Vec::new();
            return self.write_body(&rest, &dir, overwrite);
        }
        self.write_body(bytes, &dir, overwrite)
    }

    fn write_body(&mut self, bytes: &[u8], dir: &Path, overwrite: bool) -> Result<bool, FramingError> {
        let header = self.header.as_ref().expect("header parsed");
        let size = header.size;
        if self.written + bytes.len() as u64 > size {
            return Err(FramingError::TooLong { size });
        }
        let temp = self.file.as_mut().expect("file open");
        temp.writer.write_all(bytes).map_err(|source| FramingError::Io {
            what: "writing",
            path: temp.path.clone(),
            source,
        })?;
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        if self.written < size {
            return Ok(false);
        }
        // Every byte is here: check, make durable, then give it its name.
        let received: [u8; 32] = std::mem::take(&mut self.hasher).finalize().into();
        if received != header.sha256 {
            return Err(FramingError::HashMismatch { announced: hex(&header.sha256), received: hex(&received) });
        }
        let final_path = dir.join(&header.name);
        let temp = self.file.as_mut().expect("file open");
        let partial = temp.path.clone();
        let io = |what: &'static str, source| FramingError::Io { what, path: partial.clone(), source };
        temp.writer.flush().map_err(|e| io("writing", e))?;
        let file = temp.writer.get_ref();
        file.sync_all().map_err(|e| io("syncing", e))?;
        // Commit by name, but only the file this receiver created: whoever can
        // write in the directory could have put something else under the
        // temporary name. link() and rename() never follow a link at either
        // name (rename replaces a link at the final name, not its target).
        if !names_file(&partial, file) {
            return Err(FramingError::Replaced(partial));
        }
        let committed = if overwrite {
            std::fs::rename(&partial, &final_path)
        } else {
            // link() refuses an existing name atomically, unlike rename().
            std::fs::hard_link(&partial, &final_path).and_then(|()| std::fs::remove_file(&partial))
        };
        if let Err(source) = committed {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(FramingError::Exists(final_path));
            }
            return Err(FramingError::Io { what: "renaming to", path: final_path, source });
        }
        let ours = names_file(&final_path, file);
        // Closing drops the lock; the temporary name is gone already.
        self.file = None;
        if !ours {
            return Err(FramingError::Replaced(partial));
        }
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        self.committed = Some(final_path);
        self.verified_sha256 = Some(received);
        Ok(true)
    }

    /// The stream ended (the engine reported Finished): an error unless the
    /// file is complete.
    pub fn finish(&mut self) -> Result<(), FramingError> {
        match (&self.kind, &self.header) {
            (SinkKind::Discard, _) => Ok(()),
            _ if self.committed.is_some() => Ok(()),
            (_, Some(h)) => Err(FramingError::TooShort { got: self.written, size: h.size }),
            (_, None) => Err(FramingError::TooShort { got: 0, size: 0 }),
        }
    }

    /// Removes the temporary file of an unfinished transfer.
    pub fn abort(&mut self) {
        if let Some(temp) = self.file.take() {
            // Only while the name is still this file's (it may have been
            // renamed already, or replaced by someone else's).
            if names_file(&temp.path, temp.writer.get_ref()) {
                let _ = std::fs::remove_file(&temp.path);
            }
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_on_a_fixed_byte_array() {
        let h = StreamHeader { name: "a.txt".into(), size: 3, sha256: [7; 32] };
        let bytes = h.encode();
        let mut expected = b"MBFX\x01\x00\x00\x05a.txt\x00\x00\x00\x00\x00\x00\x00\x03".to_vec();
        expected.extend_from_slice(&[7; 32]);
        assert_eq!(bytes, expected);
        assert_eq!(h.encoded_len(), bytes.len());
        for cut in 0..bytes.len() {
            assert!(StreamHeader::decode(&bytes[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        assert_eq!(StreamHeader::decode(&bytes).unwrap(), Some((h, bytes.len())));
    }

    #[test]
    fn refuses_paths_and_bad_magic() {
        for name in ["", ".", "..", "a/b", "..\\x", "x\ny", ".meshbed-0123456789abcdef.partial", ".meshbed-x.partial"] {
            assert!(check_name(name).is_err(), "{name:?}");
        }
        assert!(check_name("report.pdf").is_ok());
        assert!(matches!(StreamHeader::decode(b"XB"), Err(FramingError::BadMagic(_))));
        let mut h = StreamHeader { name: "ok".into(), size: 0, sha256: [0; 32] }.encode();
        h[8] = b'/';
        h[9] = b'/';
        assert!(matches!(StreamHeader::decode(&h), Err(FramingError::BadName(_))));
    }

    #[test]
    fn sink_commits_only_a_verified_file() {
        let dir = std::env::temp_dir().join(format!("meshbed-net-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data = b"hello, mesh".to_vec();
        let mut stream = StreamHeader::for_data("greeting", &data).unwrap().encode();
        stream.extend_from_slice(&data);
        let kind = SinkKind::Directory { dir: dir.clone(), overwrite: false };
        let mut sink = Sink::new(kind.clone());
        for chunk in stream.chunks(5) {
            let done = sink.write(chunk).unwrap();
            assert_eq!(done, chunk.as_ptr_range().end == stream.as_ptr_range().end);
            let visible = dir.join("greeting").exists();
            assert_eq!(visible, done, "the final name appears only when complete");
        }
        assert_eq!(std::fs::read(dir.join("greeting")).unwrap(), data);
        // The same name again without --overwrite is refused.
        let mut again = Sink::new(kind.clone());
        assert!(matches!(again.write(&stream), Err(FramingError::Exists(_))));
        // A corrupted byte fails the hash and leaves no file behind.
        let mut bad = stream.clone();
        *bad.last_mut().unwrap() ^= 1;
        bad[8] = b'G';
        let mut sink = Sink::new(kind);
        assert!(matches!(sink.write(&bad), Err(FramingError::HashMismatch { .. })));
        drop(sink);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("greeting")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn test_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("meshbed-net-framing-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn stream(name: &str, data: &[u8]) -> Vec<u8> {
        let mut s =
            StreamHeader { name: name.into(), size: data.len() as u64, sha256: Sha256::digest(data).into() }.encode();
        s.extend_from_slice(data);
        s
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    #[test]
    fn names_with_invisible_formatting_characters_are_refused() {
        for c in ['\u{202E}', '\u{202A}', '\u{2066}', '\u{2069}', '\u{200B}', '\u{200F}', '\u{2060}', '\u{FEFF}'] {
            let name = format!("invoice{c}fdp.exe");
            let err = check_name(&name).unwrap_err().to_string();
            assert!(err.contains(&format!("U+{:04X}", u32::from(c))) && err.contains("invisible"), "{err}");
        }
        for c in ['\u{00AD}', '\u{061C}', '\u{2028}', '\u{E0041}'] {
            assert!(check_name(&format!("a{c}b")).is_err(), "{c:?}");
        }
        for ok in ["résumé.pdf", "日本語.txt", "\u{05E9}\u{05DC}\u{05D5}\u{05DD}.txt", "📄 notes.md", "a\u{0301}.txt"]
        {
            check_name(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn a_255_byte_name_is_received_and_256_bytes_are_refused_up_front() {
        let dir = test_dir("long");
        let kind = SinkKind::Directory { dir: dir.clone(), overwrite: false };
        // 238–255 bytes used to fail at create: the temporary name added 18.
        for len in [238, 255] {
            let name = "n".repeat(len);
            let mut sink = Sink::new(kind.clone());
            assert!(sink.write(&stream(&name, b"long")).unwrap(), "{len}");
            assert_eq!(std::fs::read(dir.join(&name)).unwrap(), b"long");
        }
        let mut header = stream("x", b"").to_vec();
        header[6..8].copy_from_slice(&256u16.to_be_bytes());
        let err = StreamHeader::decode(&header).unwrap_err().to_string();
        assert!(err.contains("a name of 256 bytes: must be 1 to 255 bytes"), "{err}");
        let err = check_name(&"n".repeat(256)).unwrap_err().to_string();
        assert!(err.contains("must be 1 to 255 bytes, not 256"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_files_get_fresh_random_private_names() {
        let dir = test_dir("temp");
        let kind = SinkKind::Directory { dir: dir.clone(), overwrite: false };
        let data = vec![1u8; 100];
        let full = stream("same.bin", &data);
        let (mut a, mut b) = (Sink::new(kind.clone()), Sink::new(kind));
        assert!(!a.write(&full[..full.len() - 1]).unwrap());
        assert!(!b.write(&full[..full.len() - 1]).unwrap());
        let (ta, tb) = (a.temporary().unwrap().to_path_buf(), b.temporary().unwrap().to_path_buf());
        assert_ne!(ta, tb);
        for t in [&ta, &tb] {
            let name = t.file_name().unwrap().to_str().unwrap();
            assert!(is_temporary_name(name) && !name.contains("same"), "{name}");
            assert_eq!(std::fs::metadata(t).unwrap().mode() & 0o777, 0o600);
        }
        drop((a, b));
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_at_the_final_name_is_never_written_through() {
        let dir = test_dir("link");
        let outside = test_dir("link-outside").join("victim");
        std::fs::write(&outside, b"precious").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("f")).unwrap();
        std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling")).unwrap();
        // Without --overwrite a link counts as an existing name, dangling or not.
        for name in ["f", "dangling"] {
            let mut sink = Sink::new(SinkKind::Directory { dir: dir.clone(), overwrite: false });
            assert!(matches!(sink.write(&stream(name, b"evil")), Err(FramingError::Exists(_))), "{name}");
        }
        // With it, the link itself is replaced by the file.
        let mut sink = Sink::new(SinkKind::Directory { dir: dir.clone(), overwrite: true });
        assert!(sink.write(&stream("f", b"new")).unwrap());
        assert!(std::fs::symlink_metadata(dir.join("f")).unwrap().is_file());
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"new");
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(outside.parent().unwrap()).unwrap();
    }

    #[test]
    fn stale_temporaries_are_removed_and_a_running_receivers_are_kept() {
        let dir = test_dir("stale");
        // A killed receiver's leftover: the name, a regular file, no lock.
        let stale = dir.join(temporary_name(0x0123_4567_89ab_cdef));
        std::fs::write(&stale, vec![0u8; 4096]).unwrap();
        // A running receiver's (this process holds its lock).
        let mut live = Sink::new(SinkKind::Directory { dir: dir.clone(), overwrite: false });
        live.write(&stream("in-progress", &[5; 10])[..60]).unwrap();
        let live_path = live.temporary().unwrap().to_path_buf();
        // Things that are not provably a receiver's: other names, a link, a directory.
        let outside = test_dir("stale-outside").join("keep");
        std::fs::write(&outside, b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(temporary_name(1))).unwrap();
        std::fs::create_dir(dir.join(temporary_name(2))).unwrap();
        for other in [".meshbed-zz.partial", ".x.partial-00000001", "report.partial"] {
            std::fs::write(dir.join(other), b"not ours").unwrap();
        }
        let removed = remove_stale_temporaries(&dir).unwrap();
        assert_eq!(removed, vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(live_path.exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(names(&dir).len(), 6, "{:?}", names(&dir));
        drop(live);
        assert!(!live_path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(outside.parent().unwrap()).unwrap();
    }
}
