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
//! writes the bytes to `DIR/.NAME.partial-CONNID`, hashes them on the way
//! and renames to `DIR/NAME` only when every byte is there and the hash
//! matches, so a partial file never has the final name.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Write;
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
    #[error("{what} `{path}`: {source}")]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// Checks a file name announced by a peer: one plain path component.
pub fn check_name(name: &str) -> Result<(), FramingError> {
    let bad = |why: &str| Err(FramingError::BadName(format!("{name:?}: {why}")));
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return bad("must be 1 to 255 bytes");
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
    if name.contains(".partial-") {
        return bad("looks like an unfinished transfer's temporary name");
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
            return Err(FramingError::BadName(format!("name length {name_len}")));
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

/// The state of one incoming stream.
#[derive(Debug)]
pub struct Sink {
    kind: SinkKind,
    connection_id: u32,
    /// Header bytes until the header is complete.
    pending: Vec<u8>,
    header: Option<StreamHeader>,
    file: Option<(std::io::BufWriter<File>, PathBuf)>,
    hasher: Sha256,
    written: u64,
    /// Bytes received on the stream in total (header included).
    stream_bytes: u64,
    committed: Option<PathBuf>,
    /// The SHA-256 of the bytes received, once all are here and it matched.
    verified_sha256: Option<[u8; 32]>,
}

impl Sink {
    pub fn new(kind: SinkKind, connection_id: u32) -> Self {
        Sink {
            kind,
            connection_id,
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
    /// Whether every announced byte is here (and, for files, committed).
    pub fn is_complete(&self) -> bool {
        match self.kind {
            SinkKind::Discard => false,
            SinkKind::Directory { .. } => self.committed.is_some(),
        }
    }

    fn partial_path(dir: &Path, name: &str, connection_id: u32) -> PathBuf {
        dir.join(format!(".{name}.partial-{connection_id:08x}"))
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
            let final_path = dir.join(&header.name);
            let partial = Self::partial_path(&dir, &header.name, self.connection_id);
            self.header = Some(header);
            if !overwrite && final_path.exists() {
                return Err(FramingError::Exists(final_path));
            }
            let file = File::create(&partial).map_err(|source| FramingError::Io {
                what: "creating",
                path: partial.clone(),
                source,
            })?;
            self.file = Some((std::io::BufWriter::with_capacity(1 << 20, file), partial));
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
        let (writer, partial) = self.file.as_mut().expect("file open");
        writer.write_all(bytes).map_err(|source| FramingError::Io {
            what: "writing",
            path: partial.clone(),
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
        let (writer, partial) = self.file.take().expect("file open");
        let file = writer.into_inner().map_err(|e| FramingError::Io {
            what: "writing",
            path: partial.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(|source| FramingError::Io { what: "syncing", path: partial.clone(), source })?;
        drop(file);
        let final_path = dir.join(&header.name);
        let renamed = if overwrite {
            std::fs::rename(&partial, &final_path)
        } else {
            // link() refuses an existing name atomically, unlike rename().
            std::fs::hard_link(&partial, &final_path).and_then(|()| std::fs::remove_file(&partial))
        };
        if let Err(source) = renamed {
            let _ = std::fs::remove_file(&partial);
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(FramingError::Exists(final_path));
            }
            return Err(FramingError::Io { what: "renaming to", path: final_path, source });
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
        if let Some((writer, partial)) = self.file.take() {
            drop(writer);
            let _ = std::fs::remove_file(partial);
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
        for name in ["", ".", "..", "a/b", "..\\x", "x\ny", ".f.partial-0000"] {
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
        let mut sink = Sink::new(kind.clone(), 1);
        for chunk in stream.chunks(5) {
            let done = sink.write(chunk).unwrap();
            assert_eq!(done, chunk.as_ptr_range().end == stream.as_ptr_range().end);
            let visible = dir.join("greeting").exists();
            assert_eq!(visible, done, "the final name appears only when complete");
        }
        assert_eq!(std::fs::read(dir.join("greeting")).unwrap(), data);
        // The same name again without --overwrite is refused.
        let mut again = Sink::new(kind.clone(), 2);
        assert!(matches!(again.write(&stream), Err(FramingError::Exists(_))));
        // A corrupted byte fails the hash and leaves no file behind.
        let mut bad = stream.clone();
        *bad.last_mut().unwrap() ^= 1;
        bad[8] = b'G';
        let mut sink = Sink::new(kind, 3);
        assert!(matches!(sink.write(&bad), Err(FramingError::HashMismatch { .. })));
        drop(sink);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("greeting")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
