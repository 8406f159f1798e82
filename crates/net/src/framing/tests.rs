//! The framing's tests: headers, names, the sink's commit.
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
