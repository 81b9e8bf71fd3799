// Live (root, BPF): reading a whole array map in batches gives every element's
// per-CPU copies exactly as one lookup per element does, also across chunk
// boundaries, and a map whose batch answer is not in index order (a hash) is
// read element by element instead.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collectors/bpf/bpf_array_read.hpp"
#include "live_support.hpp"

using namespace iodiag;

namespace {

struct Value {   // 24 bytes: a multiple of 8, as the per-CPU layout needs
    uint64_t a, b;
    uint32_t index, cpu;
};

class MapFd {
public:
    MapFd(bpf_map_type type, uint32_t value_size, uint32_t entries)
        : fd_(bpf_map_create(type, "iodiag_test", sizeof(uint32_t), value_size, entries, nullptr)) {}
    ~MapFd() {
        if (fd_ >= 0) close(fd_);
    }
    int fd() const { return fd_; }

private:
    int fd_;
};

Value expected(uint32_t i, int cpu) { return {i * 1000003ull + uint64_t(cpu), ~uint64_t(i), i, uint32_t(cpu)}; }

// Fills every element (each CPU's copy its own value) and reads it back.
void fill_and_check(bpf_map_type type, uint32_t entries) {
    const int ncpu = libbpf_num_possible_cpus();
    ASSERT_GT(ncpu, 0);
    MapFd m(type, sizeof(Value), entries);
    ASSERT_GE(m.fd(), 0) << std::strerror(errno);
    std::vector<Value> copies(static_cast<size_t>(ncpu));
    for (uint32_t i = 0; i < entries; ++i) {
        for (int c = 0; c < ncpu; ++c) copies[size_t(c)] = expected(i, c);
        ASSERT_EQ(bpf_map_update_elem(m.fd(), &i, copies.data(), BPF_ANY), 0) << i;
    }
    std::vector<int> seen(entries, 0);   // copies of each element handed over so far
    const size_t read =
        for_each_percpu_array_copy<Value>(m.fd(), entries, ncpu, [&](uint32_t i, int c, const Value& v) {
            ASSERT_LT(i, entries);
            EXPECT_EQ(seen[i], c) << i << ": each copy once, in CPU order";
            ++seen[i];
            const Value want = expected(i, c);
            EXPECT_EQ(v.a, want.a) << i << " cpu " << c;
            EXPECT_EQ(v.b, want.b) << i << " cpu " << c;
            EXPECT_EQ(v.index, want.index) << i << " cpu " << c;
            EXPECT_EQ(v.cpu, want.cpu) << i << " cpu " << c;
        });
    EXPECT_EQ(read, entries);
    for (uint32_t i = 0; i < entries; ++i) EXPECT_EQ(seen[i], ncpu) << i;
}

}  // namespace

TEST(LiveBpfArrayRead, PerCpuArrayReadsLikeOneLookupPerElement) {
    IODIAG_LIVE_REQUIRE(live::missing_root());
    fill_and_check(BPF_MAP_TYPE_PERCPU_ARRAY, 1000);   // not a multiple of the chunk
    fill_and_check(BPF_MAP_TYPE_PERCPU_ARRAY, 1);
}

TEST(LiveBpfArrayRead, AnAnswerOutOfIndexOrderFallsBackToLookups) {
    IODIAG_LIVE_REQUIRE(live::missing_root());
    // A per-CPU hash keyed 0..n-1: its batches come in hash order, not by index.
    fill_and_check(BPF_MAP_TYPE_PERCPU_HASH, 300);
}
