/* ns / 1000 without a 64-bit division, for the block collector's five per
 * completion; checked against the division by tests/unit/ns_to_us_test.cpp.
 * (The syscall collector's one division per syscall was measured replaced by
 * it and not kept: sys_exit 156 -> 155 ns per run, within noise.) The
 * includer defines __u64 (vmlinux.h or <linux/types.h>).
 *
 * Exact: ns/1000 = floor(floor(ns/8)/125), and with x = ns >> 3 < 2^32 and
 * m = ceil(2^35/125) = 274877907 = (2^35 + 7)/125,
 *   x*m / 2^35 = x/125 + 7x/(125 * 2^35), where 7x/2^35 < 7/8 < 1,
 * so x*m/2^35 lies in [x/125, x/125 + 1/125) and its floor is floor(x/125)
 * (x/125 is at least 1/125 below the next integer). x*m < 2^32 * 2^29 fits in
 * 64 bits. Larger values (over 34 s) take the division. */
#ifndef IODIAG_NS_TO_US_H
#define IODIAG_NS_TO_US_H

static inline __attribute__((always_inline)) __u64 iodiag_ns_to_us(__u64 ns)
{
    __u64 x = ns >> 3;
    return x < (1ULL << 32) ? (x * 274877907ULL) >> 35 : ns / 1000;
}

#endif
