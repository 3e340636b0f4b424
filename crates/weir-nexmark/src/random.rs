//! `java.util.Random`, which the reference generators seed with each
//! event's id: the same draws, so the same model.

/// Java's 48-bit linear congruential generator.
#[derive(Debug, Clone)]
pub struct JavaRandom {
    seed: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// `new Random(seed)`.
    pub fn new(seed: u64) -> Self {
        JavaRandom {
            seed: (seed ^ MULTIPLIER) & MASK,
        }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(MULTIPLIER).wrapping_add(0xB)) & MASK;
        (self.seed >> (48 - bits)) as i32
    }

    /// `nextInt(bound)`: uniform in `0..bound` (`bound > 0`).
    pub fn next_int(&mut self, bound: i32) -> i32 {
        let bound = bound.max(1);
        if bound & (bound - 1) == 0 {
            return ((i64::from(bound) * i64::from(self.next(31))) >> 31) as i32;
        }
        loop {
            let bits = self.next(31);
            let val = bits % bound;
            if bits.wrapping_sub(val).wrapping_add(bound - 1) >= 0 {
                return val;
            }
        }
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        (i64::from(self.next(32)) << 32).wrapping_add(i64::from(self.next(32)))
    }

    /// `nextDouble()`: uniform in `[0, 1)`.
    pub fn next_double(&mut self) -> f64 {
        let hi = (self.next(26) as i64) << 27;
        let lo = self.next(27) as i64;
        (hi + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Nexmark's `nextLong(random, n)`: uniform in `0..n`.
    pub fn next_long_below(&mut self, n: u64) -> u64 {
        if n < i32::MAX as u64 {
            self.next_int(n as i32) as u64
        } else {
            self.next_long().unsigned_abs() % n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java() {
        // new java.util.Random(42).nextInt() four times, nextInt(10), and
        // new Random(0).nextDouble().
        let mut r = JavaRandom::new(42);
        let ints: Vec<i32> = (0..4).map(|_| r.next(32)).collect();
        assert_eq!(
            ints,
            [-1_170_105_035, 234_785_527, -1_360_544_799, 205_897_768]
        );
        assert_eq!(JavaRandom::new(42).next_int(10), 0);
        let mut r = JavaRandom::new(0);
        assert!((r.next_double() - 0.730_967_787_376_657).abs() < 1e-15);
    }
}
