//! A flow's application data: bytes that follow from the flow's key and
//! their offset alone, which the verifier regenerates, and the rest of a
//! long flow's data, written as its sender's window frees.

use meshbed_proto::connection::EngineConfig;

/// The application data of a flow: each 8-byte word a function of the
/// flow's key and the word's place, generated in fixed blocks so that the
/// verifier can regenerate the same sequence piece by piece without keeping
/// a copy of the data.
///
/// The words need not be unpredictable, only different wherever a byte
/// could land by mistake: the key (drawn from the flow's own random stream)
/// tells flows apart, and within a flow no two words are equal (the word
/// is a bijection of its index), so data delivered at the wrong offset, a
/// duplicate or a gap fails the check. Drawing the bytes from ChaCha
/// instead cost 3.7% of a 6-hop TCP chain's run, twice per byte (issue 28).
pub(super) struct ByteStream {
    key: u64,
    /// Index of the first word of the next block.
    next_word: u64,
    block: [u8; BLOCK_BYTES],
    pos: usize,
}

const BLOCK_BYTES: usize = 4096;

impl ByteStream {
    pub(super) fn new(key: u64) -> Self {
        // Starts with an exhausted block, so the first read writes one.
        ByteStream { key, next_word: 0, block: [0; BLOCK_BYTES], pos: BLOCK_BYTES }
    }

    /// Word `index` of the flow keyed `key`: an odd multiplier and an
    /// xor-shift, each invertible, so distinct indices give distinct words.
    #[inline]
    fn word(key: u64, index: u64) -> u64 {
        let x = (key ^ index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 32)
    }

    fn write_block(&mut self) {
        let (key, first) = (self.key, self.next_word);
        for (i, out) in (first..).zip(self.block.chunks_exact_mut(8)) {
            out.copy_from_slice(&Self::word(key, i).to_le_bytes());
        }
        self.next_word += (BLOCK_BYTES / 8) as u64;
        self.pos = 0;
    }

    pub(super) fn next_chunk(&mut self, max: usize) -> &[u8] {
        if self.pos == self.block.len() {
            self.write_block();
        }
        let n = max.min(self.block.len() - self.pos);
        let chunk = &self.block[self.pos..self.pos + n];
        self.pos += n;
        chunk
    }
    pub(super) fn fill(&mut self, out: &mut [u8]) {
        let mut at = 0;
        while at < out.len() {
            let chunk = self.next_chunk(out.len() - at);
            out[at..at + chunk.len()].copy_from_slice(chunk);
            at += chunk.len();
        }
    }
    /// Offset (within `got`) of the first byte that differs from the stream.
    pub(super) fn first_mismatch(&mut self, got: &[u8]) -> Option<usize> {
        let mut at = 0;
        while at < got.len() {
            let chunk = self.next_chunk(got.len() - at);
            let n = chunk.len();
            let part = &got[at..at + n];
            // Equal slices compare as a block (issue 28: byte by byte this
            // was 5% of a 6-hop TCP chain's run); only a block that differs
            // is searched for its first differing byte.
            if chunk != part {
                let k = chunk.iter().zip(part).position(|(a, b)| a != b).expect("the blocks differ");
                return Some(at + k);
            }
            at += n;
        }
        None
    }
}

/// The most a sender holds at once (unacknowledged plus written and not
/// yet sent): a flow with more data writes it as the window frees, from the
/// same stream, instead of holding all of it from the start. 4 MiB is
/// Linux's default largest send buffer (`net.ipv4.tcp_wmem`); the TCP
/// engines' windows (64 segments) never come near it, and an ATP flow that
/// had 4 MiB unacknowledged would be held back as a real socket holds it.
/// A 100 s flow of the ATP paper's network (2 Mbit/s links) had 25 MB
/// allocated up front, 25 such flows 631 MiB (issue 28).
pub(crate) const SEND_WINDOW_BYTES: u64 = 4 << 20;

/// The least a streaming sender is kept ahead of what it has sent: more
/// than any engine sends between two refills in the simulator (ATP and MTL
/// pace one packet per due time there; TCP's burst is at most its window,
/// [`Source::lead_for`]). Writing only this far ahead, not up to the
/// window, keeps a flow's memory at what it has unacknowledged plus this:
/// 25 flows of the ATP paper's network held 4 MiB each, 100 of the run's
/// 116 MiB (issue 28). The engines see the same bytes at the same times:
/// none runs out of unsent data where it did not before.
pub(super) const REFILL_LEAD_BYTES: u64 = 1 << 20;

/// The rest of a streaming sender's data, written as its window frees.
pub(super) struct Source {
    pub(super) stream: ByteStream,
    /// Bytes not yet written.
    pub(super) left: u64,
    /// Bytes written so far.
    pub(super) written: u64,
    /// Unsent bytes the sender is kept at (at least; at most its window).
    pub(super) lead: u64,
}

impl Source {
    /// The rest of a flow of `bytes`, kept `lead_for(config)` ahead.
    pub(super) fn new(stream: ByteStream, bytes: u64, lead: u64) -> Self {
        Source { stream, left: bytes, written: 0, lead }
    }

    /// How far ahead of its sends an engine is kept: [`REFILL_LEAD_BYTES`],
    /// or twice a TCP window if that is more (a window's burst at one
    /// instant), at most the whole window [`SEND_WINDOW_BYTES`].
    pub(super) fn lead_for(config: &EngineConfig) -> u64 {
        let burst = match config {
            EngineConfig::Tcp { config, .. } => 2 * u64::from(config.max_cwnd_segments) * config.mss_bytes as u64,
            EngineConfig::Atp(_) | EngineConfig::Mtl(_) => 0,
        };
        burst.clamp(REFILL_LEAD_BYTES, SEND_WINDOW_BYTES)
    }
}
