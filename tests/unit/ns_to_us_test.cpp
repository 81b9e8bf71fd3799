// bpf/ns_to_us.h: the BPF programs' division-free ns -> us conversion gives
// exactly ns / 1000 (so the histograms keep the same buckets as the division).
#include <gtest/gtest.h>

#include <linux/types.h>

#include <cstdint>
#include <random>

#include "bpf/ns_to_us.h"

namespace {

TEST(NsToUs, EqualsTheDivisionExactly) {
    auto check = [](uint64_t ns) { ASSERT_EQ(iodiag_ns_to_us(ns), ns / 1000) << ns; };
    // Every value up to 16 ms, where nearly all syscalls and requests fall.
    for (uint64_t ns = 0; ns < 16'000'000; ++ns) check(ns);
    // Around every multiple of 1000 near each log2 bucket edge (2^k us), and
    // around the multiply's limit (ns >> 3 = 2^32, about 34 s) and above it.
    for (int k = 0; k < 50; ++k)
        for (uint64_t edge : {(uint64_t(1) << k) * 1000, uint64_t(1) << (k + 10)})
            for (uint64_t d = 0; d < 4000; ++d) {
                check(edge + d);
                if (edge >= d) check(edge - d);
            }
    for (uint64_t d = 0; d < 100'000; ++d) {
        check((uint64_t(1) << 35) - d);
        check((uint64_t(1) << 35) + d);
    }
    check(UINT64_MAX);
    // Random values below the limit (the multiply's own range).
    std::mt19937_64 rng(12345);
    for (int i = 0; i < 2'000'000; ++i) check(rng() & ((uint64_t(1) << 35) - 1));
}

}  // namespace
