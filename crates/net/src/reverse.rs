//! Reverse tests (`meshbed send --reverse`, iperf3's `-R`): the client asks
//! a receiver that allows it (`meshbed recv --allow-reverse`) to send it a
//! timed test stream, and receives it.
//!
//! The request is an ordinary transfer from the client to the receiver,
//! flagged in its header ([`crate::framing::StreamKind::Reverse`]), whose
//! body is [`ReverseRequest::encode`]'s [`REQUEST_BYTES`] bytes: the UDP
//! port the client receives on, big-endian `u16`, then the duration in
//! milliseconds, big-endian `u64`. It is hashed and confirmed like a file,
//! so the client knows the receiver took it; nothing is written. The
//! receiver then opens a timed stream, with the request's protocol, to the
//! request's source address and the requested port: never another host.
//!
//! Why this is not a reflector (docs/PROTOCOLS.md §6, "Reverse tests"):
//! the receiver must allow reverse tests; the request is a whole
//! transfer, so its sender took part in a handshake from that address;
//! the stream it triggers is itself a connection that sends data only
//! once the client's receiver answers its handshake, so a victim that
//! never asked gets a few handshake datagrams, not a stream; with `--psk`
//! only key holders can ask; and the duration is bounded.

use crate::framing::FramingError;
use std::time::Duration;

/// The body of a reverse test request.
pub const REQUEST_BYTES: usize = 10;

/// The longest reverse test a receiver runs (as `--time`'s own bound is a
/// day, a receiver would otherwise send for a day to anyone allowed).
pub const MAX_REVERSE: Duration = Duration::from_secs(3600);

/// The name a reverse request's header carries.
pub const REQUEST_NAME: &str = "reverse-test-request";

/// What the client asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReverseRequest {
    /// The UDP port the client receives the stream on (at the request's
    /// source address).
    pub port: u16,
    /// How long the receiver sends.
    #[serde(serialize_with = "seconds")]
    pub duration: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl ReverseRequest {
    pub fn encode(&self) -> [u8; REQUEST_BYTES] {
        let mut b = [0u8; REQUEST_BYTES];
        b[..2].copy_from_slice(&self.port.to_be_bytes());
        b[2..].copy_from_slice(&(self.duration.as_millis().min(u128::from(u64::MAX)) as u64).to_be_bytes());
        b
    }

    /// Reads a request body, refusing a zero port and a duration of zero or
    /// beyond [`MAX_REVERSE`].
    pub fn decode(body: &[u8]) -> Result<ReverseRequest, FramingError> {
        let bad = |why: String| Err(FramingError::BadRequest(why));
        let Ok(b) = <[u8; REQUEST_BYTES]>::try_from(body) else {
            return bad(format!("a reverse test request of {} bytes, expected {REQUEST_BYTES}", body.len()));
        };
        let port = u16::from_be_bytes([b[0], b[1]]);
        let millis = u64::from_be_bytes(b[2..].try_into().expect("8 bytes"));
        if port == 0 {
            return bad("a reverse test request for port 0".into());
        }
        let duration = Duration::from_millis(millis);
        if duration.is_zero() || duration > MAX_REVERSE {
            return bad(format!("a reverse test of {millis} ms: expected 1 ms to {} s", MAX_REVERSE.as_secs()));
        }
        Ok(ReverseRequest { port, duration })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{Sink, SinkKind, StreamHeader, StreamKind};
    use sha2::{Digest, Sha256};

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused_with_the_reason() {
        let r = ReverseRequest { port: 7412, duration: Duration::from_millis(2500) };
        let b = r.encode();
        assert_eq!(b, [0x1c, 0xf4, 0, 0, 0, 0, 0, 0, 0x09, 0xc4]);
        assert_eq!(ReverseRequest::decode(&b).unwrap(), r);
        for (body, says) in [
            (&b[..9], "9 bytes"),
            (&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1][..], "port 0"),
            (&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], "0 ms"),
            (&[0, 1, 0, 0, 0, 0, 0, 0x36, 0xee, 0x81][..], "3600001 ms"),
        ] {
            let e = ReverseRequest::decode(body).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        assert_eq!(
            ReverseRequest::decode(&ReverseRequest { port: 1, duration: MAX_REVERSE }.encode()).unwrap().port,
            1
        );
    }

    fn request_stream(r: &ReverseRequest) -> Vec<u8> {
        let body = r.encode();
        let header = StreamHeader::for_data(REQUEST_NAME, &body).unwrap();
        let mut stream = header.encode_as(StreamKind::Reverse);
        assert_eq!(stream[5], 0x02, "flag 0x02");
        stream.extend_from_slice(&body);
        stream
    }

    #[test]
    fn a_receiver_takes_a_request_only_when_allowed_and_writes_nothing() {
        let r = ReverseRequest { port: 9000, duration: Duration::from_secs(3) };
        let stream = request_stream(&r);
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().to_path_buf();
        let directory = || SinkKind::Directory { dir: dir.clone(), overwrite: false };
        // Not allowed (the default): refused at the header, saying how to allow it.
        let err = Sink::new(directory()).write(&stream).unwrap_err();
        assert!(matches!(err, FramingError::ReverseNotAllowed), "{err}");
        assert!(err.to_string().contains("--allow-reverse"));
        // Allowed: complete and confirmed (its hash) once the body is in, in pieces.
        let mut sink = Sink::new(directory()).allowing_reverse(true);
        assert!(!sink.write(&stream[..stream.len() - 3]).unwrap());
        assert_eq!(sink.kind(), Some(StreamKind::Reverse));
        assert!(sink.write(&stream[stream.len() - 3..]).unwrap());
        assert!(sink.is_complete());
        sink.finish().unwrap();
        assert_eq!(sink.reverse_request(), Some(r));
        assert_eq!(sink.verified_sha256(), Some(Sha256::digest(r.encode()).into()));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
        // More bytes than announced, a wrong hash, or a bad body: refused.
        let mut sink = Sink::new(directory()).allowing_reverse(true);
        assert!(sink.write(&stream).unwrap());
        assert!(sink.write(b"x").is_err());
        let mut forged = stream.clone();
        *forged.last_mut().unwrap() ^= 1;
        let err = Sink::new(directory()).allowing_reverse(true).write(&forged).unwrap_err();
        assert!(matches!(err, FramingError::HashMismatch { .. }), "{err}");
        let zero_port = request_stream(&ReverseRequest { port: 0, duration: Duration::from_secs(1) });
        let err = Sink::new(directory()).allowing_reverse(true).write(&zero_port).unwrap_err();
        assert!(err.to_string().contains("port 0"), "{err}");
    }

    #[test]
    fn the_clients_sink_takes_only_a_timed_stream() {
        let file = StreamHeader::for_data("planted.sh", b"#!/bin/sh\n").unwrap().encode();
        let err = Sink::new(SinkKind::TimedOnly).write(&file).unwrap_err();
        assert!(matches!(err, FramingError::OnlyTimed(StreamKind::File)), "{err}");
        let request = request_stream(&ReverseRequest { port: 1, duration: Duration::from_secs(1) });
        let err = Sink::new(SinkKind::TimedOnly).allowing_reverse(true).write(&request).unwrap_err();
        assert!(matches!(err, FramingError::OnlyTimed(StreamKind::Reverse)), "{err}");
        let timed = StreamHeader { name: "reverse-test".into(), size: 1 << 62, sha256: [0; 32] };
        let mut body = vec![0u8; 64];
        crate::generated::fill(0, &mut body);
        let mut sink = Sink::new(SinkKind::TimedOnly);
        assert!(!sink.write(&timed.encode_as(StreamKind::Timed)).unwrap());
        assert!(!sink.write(&body).unwrap());
        assert_eq!((sink.kind(), sink.file_bytes()), (Some(StreamKind::Timed), 64));
        sink.finish().unwrap();
    }
}
