//! How the process's allocator grows its memory for state.
//!
//! State on the heap grows for as long as a job runs: a regular join keeps
//! every row, a `GROUP BY` every group. glibc's `malloc` gives each thread
//! an arena of its own and, by default, makes each of its heaps writable
//! a few pages at a time as it grows (an `mprotect` call each time, and
//! the kernel's bookkeeping of the mapping). [`grow_heaps_in_large_steps`]
//! has it reserve 64 MiB at a time instead (its `M_TOP_PAD`): memory is
//! still only resident once written, so the peak RSS stays within a few
//! MiB. As any explicit setting of it does, it also fixes the size from
//! which glibc maps an allocation apart (not from a heap) at its default,
//! 128 KiB, where it would otherwise rise with the blocks freed.
//! Measured on Nexmark SQL (`weir-bench sql`): q3 and q8 5–20 % faster,
//! q4 4–6 %, the others within noise. Binaries call it first
//! thing; a program embedding Weir may too, or tune its allocator as it
//! likes.

/// How much glibc's `malloc` reserves beyond each request that grows a
/// heap.
pub const HEAP_GROWTH: usize = 64 << 20;

/// Has the process's allocator grow its heaps [`HEAP_GROWTH`] at a time,
/// where it is glibc's (elsewhere this does nothing). Returns whether the
/// setting took.
pub fn grow_heaps_in_large_steps() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let Ok(pad) = libc::c_int::try_from(HEAP_GROWTH) else {
            return false;
        };
        // SAFETY: `mallopt` only changes the allocator's parameters; it
        // may be called at any time, from any thread.
        unsafe { libc::mallopt(libc::M_TOP_PAD, pad) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    /// On glibc the setting takes; memory is then allocated as before.
    #[test]
    fn the_allocator_takes_the_setting() {
        let took = super::grow_heaps_in_large_steps();
        assert_eq!(took, cfg!(all(target_os = "linux", target_env = "gnu")));
        let big: Vec<u64> = (0..1_000_000).collect();
        assert_eq!(big.iter().sum::<u64>(), 499_999_500_000);
    }
}
