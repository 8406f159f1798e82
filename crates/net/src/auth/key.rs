//! Where a pre-shared key comes from, and which keys are refused
//! (docs/PROTOCOLS.md §6, "Keys"; issue 26).
//!
//! HKDF does no stretching, so a guessable key falls to an offline
//! dictionary attack from one captured datagram. meshbed therefore takes
//! random keys only, as WireGuard does, and offers no passphrases (so it
//! needs no password hash such as Argon2id): `meshbed keygen FILE` writes
//! [`KEY_HEX_DIGITS`] hex digits of 32 bytes from the kernel's generator,
//! in a file only its owner may read. A key given as text must be such hex
//! digits; a binary key must have at least [`MIN_KEY_LEN`] bytes and look
//! random (many distinct byte values). A key file that group or others may
//! read or write is refused, as `ssh` refuses such private keys.

use super::{AuthError, Psk};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use zeroize::Zeroizing;

/// Shortest and longest pre-shared key, in bytes.
pub const MIN_KEY_LEN: usize = 32;
pub const MAX_KEY_LEN: usize = 4096;
/// The environment variable that may hold the key itself.
pub const ENV_KEY: &str = "MESHBED_PSK";
/// Hex digits of a key as `meshbed keygen` writes it (32 random bytes).
pub const KEY_HEX_DIGITS: usize = 64;
/// Fewest distinct byte values of a binary key: 32 random bytes have about
/// 30, and the chance that they have fewer than 16 is below 10⁻¹².
const MIN_DISTINCT_BINARY: usize = 16;
/// Fewest distinct digits of a hex key: 64 random hex digits show all 16
/// but with a chance of about 10⁻²; fewer than 10 has a chance below 10⁻⁹.
const MIN_DISTINCT_HEX: usize = 10;

fn distinct(bytes: &[u8]) -> usize {
    let mut seen = [false; 256];
    bytes.iter().for_each(|&b| seen[b as usize] = true);
    seen.iter().filter(|&&s| s).count()
}

impl Psk {
    pub(super) fn checked(bytes: &[u8], source_name: &str) -> Result<Psk, AuthError> {
        if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&bytes.len()) {
            return Err(AuthError::KeyLength { source_name: source_name.to_string(), len: bytes.len() });
        }
        let not_random = |why: String| Err(AuthError::KeyNotRandom { source_name: source_name.to_string(), why });
        let text = bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
        if text {
            if bytes.len() < KEY_HEX_DIGITS || !bytes.iter().all(u8::is_ascii_hexdigit) {
                return not_random(format!(
                    "{} characters of text that are not {KEY_HEX_DIGITS} or more hex digits (a passphrase?)",
                    bytes.len()
                ));
            }
            if distinct(&bytes.to_ascii_lowercase()) < MIN_DISTINCT_HEX {
                return not_random(format!(
                    "hex digits that use only {} of the 16",
                    distinct(&bytes.to_ascii_lowercase())
                ));
            }
        } else if distinct(bytes) < MIN_DISTINCT_BINARY {
            return not_random(format!("{} bytes with only {} distinct values", bytes.len(), distinct(bytes)));
        }
        Ok(Psk { key: Zeroizing::new(bytes.to_vec()) })
    }

    /// A key from its bytes (one trailing newline, as an editor leaves it,
    /// is not part of the key).
    pub fn from_bytes(bytes: &[u8]) -> Result<Psk, AuthError> {
        Self::checked(strip_newline(bytes), "given")
    }

    /// A key from a file: its content, less one trailing newline. Only a
    /// regular file that only its owner may read or write, opened without
    /// blocking, and read only up to the longest key.
    pub fn from_file(path: &Path) -> Result<Psk, AuthError> {
        let io = |e: std::io::Error| AuthError::Io { path: path.to_path_buf(), message: e.to_string() };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(AuthError::NotAFile(path.to_path_buf()));
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(AuthError::KeyPermissions { path: path.to_path_buf(), mode });
        }
        let mut bytes = Zeroizing::new(Vec::new());
        file.take(MAX_KEY_LEN as u64 + 3).read_to_end(&mut bytes).map_err(io)?;
        Self::checked(strip_newline(&bytes), &format!("file `{}`", path.display()))
    }

    /// The key in the environment variable [`ENV_KEY`], if set.
    pub fn from_env() -> Result<Option<Psk>, AuthError> {
        match std::env::var_os(ENV_KEY) {
            None => Ok(None),
            Some(v) => {
                use std::os::unix::ffi::OsStrExt;
                Self::checked(strip_newline(v.as_bytes()), &format!("in ${ENV_KEY}")).map(Some)
            }
        }
    }

    /// A fresh random key, for one process (benchmarks, tests).
    pub fn random() -> Result<Psk, AuthError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut()).map_err(|e| AuthError::Random(e.to_string()))?;
        let hex = Zeroizing::new(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        Ok(Psk { key: Zeroizing::new(hex.as_bytes().to_vec()) })
    }

    /// `meshbed keygen FILE`: writes a new random key to `path` (which must
    /// not exist) with mode 0600, as [`KEY_HEX_DIGITS`] hex digits and a
    /// newline, the form [`Psk::from_file`] reads.
    pub fn generate_file(path: &Path) -> Result<(), AuthError> {
        let io = |e: std::io::Error| AuthError::Io { path: path.to_path_buf(), message: e.to_string() };
        let key = Psk::random()?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(io)?;
        // The umask cannot widen 0600, but a file system might ignore it.
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        file.write_all(&key.key).and_then(|()| file.write_all(b"\n")).and_then(|()| file.sync_all()).map_err(io)
    }
}

fn strip_newline(bytes: &[u8]) -> &[u8] {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b.strip_suffix(b"\r").unwrap_or(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key `meshbed keygen` could have written.
    const HEX: &[u8] = b"3f9a0c1e7b2d48a65c0e9f1d2b3a4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d";

    #[test]
    fn random_keys_are_taken_and_guessable_ones_refused_with_the_reason() {
        assert!(Psk::from_bytes(HEX).is_ok());
        assert!(Psk::from_bytes(&[HEX, b"\n"].concat()).is_ok());
        let binary: Vec<u8> = (0u8..32).map(|i| i.wrapping_mul(97).wrapping_add(13)).collect();
        assert!(Psk::from_bytes(&binary).is_ok());
        for (key, says) in [
            (&b"short"[..], "5 bytes; expected 32 to 4096"),
            (&b"correct horse battery staple, and more words"[..], "not 64 or more hex digits (a passphrase?)"),
            (&[b'a'; 64][..], "use only 1 of the 16"),
            (&[9u8; 32][..], "only 1 distinct values"),
            (&HEX[..40], "40 characters of text"),
        ] {
            let e = Psk::from_bytes(key).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
            assert!(e.contains("meshbed keygen") || e.contains("bytes;"), "{e}");
        }
    }

    #[test]
    fn key_files_are_checked_never_printed_and_keygen_writes_one_only_its_owner_reads() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        let file = dir.join("key");
        Psk::generate_file(&file).unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let text = std::fs::read(&file).unwrap();
        assert_eq!(text.len(), KEY_HEX_DIGITS + 1);
        let k = Psk::from_file(&file).unwrap();
        assert_eq!(format!("{k:?}"), "Psk(64 bytes)");
        // Never over an existing file.
        assert!(matches!(Psk::generate_file(&file), Err(AuthError::Io { .. })));
        assert_eq!(std::fs::read(&file).unwrap(), text);
        // Readable by the group or by others: refused, saying how to fix it.
        for mode in [0o640, 0o604, 0o660, 0o644] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = Psk::from_file(&file).unwrap_err().to_string();
            assert!(e.contains(&format!("mode {mode:04o}")) && e.contains("chmod 600"), "{e}");
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(Psk::from_file(&file).is_ok());
        // Too long, a directory, absent, a FIFO (not waited on).
        let long = dir.join("long");
        std::fs::write(&long, vec![b'k'; 5000]).unwrap();
        std::fs::set_permissions(&long, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = Psk::from_file(&long).unwrap_err().to_string();
        assert!(err.contains(&long.display().to_string()) && err.contains("bytes"), "{err}");
        assert!(matches!(Psk::from_file(dir), Err(AuthError::NotAFile(_))));
        assert!(matches!(Psk::from_file(&dir.join("absent")), Err(AuthError::Io { .. })));
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(Psk::from_file(&fifo), Err(AuthError::NotAFile(_))));
    }
}
