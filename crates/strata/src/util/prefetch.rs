//! Cache-line prefetch hints for batched reads: a batch asks for the lines
//! its next step will touch (filter bits) for all of its keys first, so the
//! memory fetches overlap instead of each key's waiting on the previous one's.

/// Asks the CPU to bring the cache line holding `p` into its caches. A hint
/// only: no effect on what any read returns, and a no-op off x86-64.
#[inline(always)]
pub(crate) fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and never changes memory, whatever the
    // address (Intel SDM, PREFETCHh), so any pointer value is fine.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_change_nothing_and_accept_any_address() {
        let data: Vec<u8> = (0..=255).collect();
        for i in [0, 3, 64, 255, 4096] {
            prefetch_line(data.as_ptr().wrapping_add(i));
        }
        prefetch_line(std::ptr::null());
        assert_eq!(data, (0..=255).collect::<Vec<u8>>());
    }
}
