//! Unit tests of a flow's engines and data.
use super::*;
use meshbed_proto::Protocol;

#[test]
fn path_info_is_delivered_only_when_it_changes() {
    let protocol = Protocol::TcpNewReno;
    let spec = TransportFlow::new(protocol, crate::scenario::Amount::Bytes(1000));
    let mut t = Transport::new(7, 0, &spec, Instant::ZERO, 1000);
    let info = |hop_count, max_link_loss| PathInfo { hop_count, max_link_loss, link_rate_bps: 24_000_000 };
    let now = Instant::ZERO + Duration::from_secs(1);
    // TCP ignores path information: its deadline stays, no timer.
    assert_eq!(t.path_info(now, Side::Sender, Some(info(3, 0.28))), None);
    assert_eq!(t.path_info(now, Side::Sender, Some(info(3, 0.28))), None);
    assert_eq!(t.path_info_updates, 1);
    t.path_info(now, Side::Receiver, Some(info(3, 0.28)));
    t.path_info(now, Side::Sender, Some(info(3, 0.1)));
    assert_eq!(t.path_info_updates, 3);
    // A lost route is remembered, not delivered; the same path after
    // it is news again.
    t.path_info(now, Side::Sender, None);
    assert_eq!((t.path_info_updates, t.path_info[Side::Sender as usize]), (3, None));
    t.path_info(now, Side::Sender, Some(info(3, 0.1)));
    assert_eq!(t.path_info_updates, 4);
    assert_eq!(t.path_info[Side::Receiver as usize], Some(info(3, 0.28)));
    // A finished flow gets nothing.
    t.finish();
    t.path_info(now, Side::Sender, Some(info(4, 0.1)));
    assert_eq!(t.path_info_updates, 4);
}

/// A long flow's sender is written only its lead ahead of what it has
/// sent, not its whole window (issue 28: 4 MiB per flow was most of a
/// 25-flow run's memory); a TCP window's burst widens the lead.
#[test]
fn a_long_flow_is_written_its_lead_ahead_not_its_window() {
    let protocol = Protocol::AtpDefault;
    let bytes = 100 << 20;
    let spec = TransportFlow::new(protocol, crate::scenario::Amount::Bytes(bytes));
    let mut t = Transport::new(7, 0, &spec, Instant::ZERO, bytes);
    let held = |t: &mut Transport| SEND_WINDOW_BYTES - t.sender.engine().write_room() as u64;
    assert_eq!(held(&mut t), 0);
    t.refill();
    assert_eq!(held(&mut t), data::REFILL_LEAD_BYTES);
    // Nothing sent yet: a second refill writes nothing more.
    t.refill();
    assert_eq!(held(&mut t), data::REFILL_LEAD_BYTES);
    let tcp = |max_cwnd_segments: u32| {
        let config = TcpConfig { max_cwnd_segments, ..TcpConfig::default() };
        data::Source::lead_for(&EngineConfig::Tcp { variant: meshbed_proto::tcp::TcpVariant::NewReno, config })
    };
    assert_eq!(tcp(64), data::REFILL_LEAD_BYTES, "64 segments: the floor");
    assert_eq!(tcp(1_000), 2 * 1_000 * TcpConfig::default().mss_bytes as u64);
    assert_eq!(tcp(100_000), SEND_WINDOW_BYTES, "never more than the window");
}

#[test]
fn verifier_regenerates_the_data_in_any_chunking() {
    let key = stream_rng(7, StreamId::new(StreamKind::Transport, 3)).next_u64();
    let mut data = vec![0u8; 10_000];
    ByteStream::new(key).fill(&mut data);
    let mut v = ByteStream::new(key);
    for piece in [&data[..1], &data[1..1437], &data[1437..5000], &data[5000..]] {
        assert_eq!(v.first_mismatch(piece), None);
    }
    let mut bad = data.clone();
    bad[4321] ^= 1;
    let mut v = ByteStream::new(key);
    assert_eq!(v.first_mismatch(&bad[..4000]), None);
    assert_eq!(v.first_mismatch(&bad[4000..]), Some(321));
}

/// What the verifier relies on: within a flow no two 8-byte words are
/// equal, so data delivered at another word's place, twice, or with a gap
/// fails; another key gives other data; and the bytes do not depend on how
/// they are read out.
#[test]
fn data_at_the_wrong_place_or_of_another_flow_fails_the_check() {
    let key = stream_rng(7, StreamId::new(StreamKind::Transport, 0)).next_u64();
    let mut data = vec![0u8; 3 * 4096 + 100];
    ByteStream::new(key).fill(&mut data);
    let words: std::collections::HashSet<&[u8]> = data.chunks_exact(8).collect();
    assert_eq!(words.len(), data.len() / 8, "a repeated word");
    // Read out in odd pieces, the same bytes.
    let mut pieces = ByteStream::new(key);
    let mut again = Vec::new();
    while again.len() < data.len() {
        let n = (data.len() - again.len()).min(1 + again.len() % 977);
        again.extend_from_slice(pieces.next_chunk(n));
    }
    assert_eq!(again, data);
    // A segment delivered at another offset (here one segment late: a
    // duplicate in place of the next) is caught at its first byte.
    let mut v = ByteStream::new(key);
    assert_eq!(v.first_mismatch(&data[..1460]), None);
    assert_eq!(v.first_mismatch(&data[..1460]), Some(0));
    // Another flow's key: different from the first word on.
    let other = stream_rng(7, StreamId::new(StreamKind::Transport, 1)).next_u64();
    let mut v = ByteStream::new(other);
    assert_eq!(v.first_mismatch(&data[..64]), Some(0));
}
