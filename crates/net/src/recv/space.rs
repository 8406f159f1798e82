//! Room on disk for an announced file (issue 26; docs/PROTOCOLS.md §6,
//! "Limits"): a file is refused before its first byte is written when it
//! would not fit in the file system's free space less a reserve, with the
//! files the other transfers in progress announced, or in its sender's
//! quota. A write that still finds the disk full (something else filled
//! it) ends the transfer the same way. Either way the sender is told
//! "receiver out of space" ([`meshbed_proto::wire::ResetReason::NoSpace`]).

use std::path::Path;

/// The receiver's disk limits.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SpaceLimits {
    /// Bytes left free on the file system whatever is announced; `None`:
    /// [`default_reserve`] of its size.
    pub reserve_bytes: Option<u64>,
    /// Bytes one IP address may have committed in this run plus announced
    /// in transfers in progress; `None`: no quota.
    pub quota_per_peer_bytes: Option<u64>,
}

/// The reserve when none is given: 5% of the file system (ext4 keeps as
/// much for root), at most 1 GiB.
pub fn default_reserve(total_bytes: u64) -> u64 {
    (total_bytes / 20).min(1 << 30)
}

/// A file system's free space for unprivileged writers and its size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FileSystemSpace {
    pub available_bytes: u64,
    pub total_bytes: u64,
}

impl FileSystemSpace {
    /// Asks the kernel about the file system holding `dir` (statvfs).
    pub fn of(dir: &Path) -> std::io::Result<FileSystemSpace> {
        let s = rustix::fs::statvfs(dir)?;
        Ok(FileSystemSpace {
            available_bytes: s.f_bavail.saturating_mul(s.f_frsize),
            total_bytes: s.f_blocks.saturating_mul(s.f_frsize),
        })
    }
}

/// What else holds a claim on the disk when a file of `size_bytes` is
/// announced.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// Bytes the other transfers in progress announced and have not written.
    pub promised_bytes: u64,
    /// Bytes the sender's address committed in this run, plus what its
    /// other transfers in progress announced.
    pub peer_bytes: u64,
}

/// Whether a file of `size_bytes` may start: `Err` with the reason the
/// receiver logs (the sender hears "receiver out of space").
pub fn admit(size_bytes: u64, space: FileSystemSpace, claims: Claims, limits: SpaceLimits) -> Result<(), String> {
    if let Some(quota) = limits.quota_per_peer_bytes {
        if claims.peer_bytes.saturating_add(size_bytes) > quota {
            return Err(format!(
                "a {size_bytes}-byte file would take this sender past its quota of {quota} bytes ({} committed or announced already)",
                claims.peer_bytes
            ));
        }
    }
    let reserve = limits.reserve_bytes.unwrap_or_else(|| default_reserve(space.total_bytes));
    let room = space.available_bytes.saturating_sub(reserve).saturating_sub(claims.promised_bytes);
    if size_bytes > room {
        return Err(format!(
            "a {size_bytes}-byte file does not fit: {} bytes free, less a reserve of {reserve} and {} announced by transfers in progress",
            space.available_bytes, claims.promised_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn space(available_mib: u64, total_mib: u64) -> FileSystemSpace {
        FileSystemSpace { available_bytes: available_mib * MIB, total_bytes: total_mib * MIB }
    }

    #[test]
    fn a_file_fits_in_the_free_space_less_the_reserve_and_the_promises() {
        let limits = SpaceLimits::default();
        // 100 MiB file system: 5 MiB reserve.
        assert_eq!(admit(15 * MIB, space(20, 100), Claims::default(), limits), Ok(()));
        let err = admit(15 * MIB + 1, space(20, 100), Claims::default(), limits).unwrap_err();
        assert!(err.contains("does not fit") && err.contains("reserve of 5242880"), "{err}");
        // 10 MiB announced by others and not written yet.
        let claims = Claims { promised_bytes: 10 * MIB, peer_bytes: 0 };
        assert!(admit(6 * MIB, space(20, 100), claims, limits).is_err());
        assert_eq!(admit(5 * MIB, space(20, 100), claims, limits), Ok(()));
        // The default reserve stops at 1 GiB; an explicit one is taken as is.
        assert_eq!(default_reserve(1 << 40), 1 << 30);
        let none = SpaceLimits { reserve_bytes: Some(0), ..limits };
        assert_eq!(admit(20 * MIB, space(20, 100), Claims::default(), none), Ok(()));
        // A full disk refuses even an empty file's worth beyond it.
        assert!(admit(1, space(0, 100), Claims::default(), none).is_err());
    }

    #[test]
    fn a_sender_stays_within_its_quota() {
        let limits = SpaceLimits { reserve_bytes: Some(0), quota_per_peer_bytes: Some(10 * MIB) };
        let claims = Claims { promised_bytes: 0, peer_bytes: 8 * MIB };
        assert_eq!(admit(2 * MIB, space(1000, 1000), claims, limits), Ok(()));
        let err = admit(2 * MIB + 1, space(1000, 1000), claims, limits).unwrap_err();
        assert!(err.contains("quota of 10485760") && err.contains("8388608 committed or announced"), "{err}");
    }
}
