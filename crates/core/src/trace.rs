//! A stable hash of an event trace (FNV-1a over little-endian words), used to
//! check that a seed reproduces a run bit for bit and that two seeds differ.

use fnv::FnvHasher;
use std::hash::Hasher;

#[derive(Default)]
pub struct TraceHash(FnvHasher);

impl TraceHash {
    pub fn write_u64(&mut self, x: u64) {
        self.0.write(&x.to_le_bytes());
    }
    pub fn write_u32(&mut self, x: u32) {
        self.0.write(&x.to_le_bytes());
    }
    pub fn finish(&self) -> u64 {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn order_matters_and_is_stable() {
        let mut a = TraceHash::default();
        a.write_u64(1);
        a.write_u64(2);
        let mut b = TraceHash::default();
        b.write_u64(2);
        b.write_u64(1);
        assert_ne!(a.finish(), b.finish());
        let mut c = TraceHash::default();
        c.write_u64(1);
        c.write_u64(2);
        assert_eq!(a.finish(), c.finish());
    }
}
