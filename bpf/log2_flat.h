/* floor(log2(v)) (0 for 0 and 1) without a branch per bit, capped at
 * buckets - 1: the verifier sees one bounded unknown, not a constant per
 * path, so an index made from it is checked once. Shared by the block and
 * io_uring collectors' histograms and the syscall collector's fast path. The includer
 * defines __u32 and __u64 (vmlinux.h or <linux/types.h>). */
#ifndef IODIAG_LOG2_FLAT_H
#define IODIAG_LOG2_FLAT_H

static inline __attribute__((always_inline)) __u32 iodiag_log2_flat(__u64 v, __u32 buckets)
{
    __u32 r, shift;
    shift = (v > 0xFFFFFFFF) << 5; v >>= shift; r = shift;
    shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
    shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
    shift = (v > 0xF) << 2; v >>= shift; r |= shift;
    shift = (v > 0x3) << 1; v >>= shift; r |= shift;
    r |= (v >> 1);
    return r < buckets ? r : buckets - 1;
}

#endif
