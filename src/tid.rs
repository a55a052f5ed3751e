//! Maps keyed by a process or thread id, hashed by one multiplication.
//!
//! The tracer and the sinks look up a tid in a dozen maps at every stop. The standard
//! SipHash is built to resist keys chosen to collide; thread ids are not chosen by the
//! workload (the kernel hands them out, in order, from a range bounded by `pid_max`), so a
//! Fibonacci multiplication is enough: its low bits (the bucket) are a bijection of the id's
//! low bits, so ids in a row never share a bucket, and its high bits (hashbrown's tag) mix
//! every bit of the id. sbx sees ids of its own pid namespace, which a workload cannot pick
//! (`ns_last_pid` of a namespace it owns sets only the ids inside it). Ids that agree in
//! their low bits share a bucket; a workload cycling through pids to keep many such tasks
//! alive (about the square root of `pid_max` of them) needs millions of forks, and slows
//! only the lookups of its own run.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier: 2^64 divided by the golden ratio, made odd.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// See the module documentation. Keys other than integers are folded in word by word.
#[derive(Debug, Default, Clone, Copy)]
pub struct TidHasher(u64);

impl Hasher for TidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }

    fn write_i32(&mut self, n: i32) {
        // Sign-extended: -1 and 1 must not meet.
        self.write_u64(i64::from(n).cast_unsigned());
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

/// A map from a process or thread id.
pub type TidMap<V> = HashMap<i32, V, BuildHasherDefault<TidHasher>>;
/// A set of process or thread ids.
pub type TidSet = HashSet<i32, BuildHasherDefault<TidHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(n: i32) -> u64 {
        BuildHasherDefault::<TidHasher>::default().hash_one(n)
    }

    #[test]
    fn ids_in_a_row_never_share_a_bucket_of_a_small_table() {
        // 64 buckets: the low 6 bits.
        for base in [1, 300, 4_194_240] {
            let buckets: HashSet<u64> = (base..base + 64).map(|n| hash(n) & 63).collect();
            assert_eq!(buckets.len(), 64, "from {base}");
        }
    }

    #[test]
    fn the_high_bits_differ_between_neighbours() {
        // hashbrown's tag is the top 7 bits: neighbours should rarely share it.
        let same = (1..10_000)
            .filter(|&n| hash(n) >> 57 == hash(n + 1) >> 57)
            .count();
        assert!(same < 300, "{same} of 10,000 neighbours share a tag");
    }

    #[test]
    fn negative_and_positive_ids_differ() {
        assert_ne!(hash(-1), hash(1));
        assert_ne!(hash(-100), hash(100));
    }

    #[test]
    fn maps_and_sets_work_as_usual() {
        let mut m: TidMap<&str> = TidMap::default();
        let mut s = TidSet::default();
        for n in 0..5000 {
            m.insert(n, "x");
            s.insert(n * 7);
        }
        assert_eq!(m.len(), 5000);
        assert!(s.contains(&(4999 * 7)) && !s.contains(&1));
        m.retain(|k, _| k % 2 == 0);
        assert_eq!(m.len(), 2500);
        assert_eq!(m.get(&4998), Some(&"x"));
    }
}
