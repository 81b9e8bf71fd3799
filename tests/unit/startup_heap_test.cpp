// The start-up heap: huge pages only with free 2 MiB blocks to fault them in
// from, and glibc's usual thresholds once the start is over.
#include <gtest/gtest.h>

#include <cstdlib>

#include <malloc.h>

#include "app/startup_heap.hpp"

using iodiag::cli::free_blocks_of_order;
using iodiag::cli::StartupHeap;

TEST(StartupHeap, CountsFreeBlocksOfAnOrderAcrossZonesAndLargerOrders) {
    const std::string buddyinfo =
        "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n"
        "Node 0, zone    DMA32      4      1      2      2      2      2      1      4      4      2    752 \n"
        "Node 0, zone   Normal   2859   3389   3197   2838   1886   1182    799    582    418    255    315 \n";
    // order 9: (1 + 2*3) + (2 + 2*752) + (255 + 2*315)
    EXPECT_EQ(free_blocks_of_order(buddyinfo, 9), 7u + 1506u + 885u);
    EXPECT_EQ(free_blocks_of_order(buddyinfo, 10), 3u + 752u + 315u);
    EXPECT_EQ(free_blocks_of_order("", 9), 0u);
    EXPECT_EQ(free_blocks_of_order("garbage\nNode 0, zone Normal x y\n", 0), 0u);
}

namespace {

// A block the compiler cannot elide (a malloc/free pair with no use goes away).
void* touched_block(size_t bytes) {
    auto* p = static_cast<volatile char*>(malloc(bytes));
    p[0] = 1;
    return const_cast<char*>(p);
}

}  // namespace

TEST(StartupHeap, LargeBlocksComeFromTheHeapWhileStartingAndItsFreeTopIsHandedBack) {
    auto mapped_bytes = [] { return mallinfo2().hblkhd; };
    const size_t before = mapped_bytes();
    void* probe = touched_block(40u << 20);   // above glibc's largest threshold: mapped by its malloc
    const bool glibc_maps_large_blocks = mapped_bytes() > before;
    free(probe);
    if (!glibc_maps_large_blocks) GTEST_SKIP() << "not glibc's allocator (a sanitizer's): nothing is tuned";
    {
        StartupHeap heap;
        // keepcost: the free space at the heap's top, which trimming would release.
        EXPECT_GE(mallinfo2().keepcost, 32u << 20) << "the heap was extended by the start-up region";
        const size_t during = mapped_bytes();
        void* block = touched_block(8u << 20);
        EXPECT_EQ(mapped_bytes(), during) << "an 8 MiB block while starting comes from the heap";
        free(block);
    }
    EXPECT_LT(mallinfo2().keepcost, 1u << 20) << "the region's free top went back to the kernel";
}

TEST(StartupHeap, BlocksStartOnTheFirstHugePage) {
    StartupHeap heap;
    if (heap.huge_pages_from() == 0) GTEST_SKIP() << "the start-up heap is on 4 KiB pages here (no THP, too few free huge blocks, or not glibc's allocator)";
    // Larger than every free chunk but the top (what earlier tests freed), so
    // it comes from the top, where the start's next blocks come from.
    const struct mallinfo2 m = mallinfo2();
    void* block = malloc(m.fordblks - m.keepcost + 4096);
    EXPECT_GE(reinterpret_cast<uintptr_t>(block), heap.huge_pages_from())
        << "the next block would fault in 4 KiB pages below the huge ones";
    EXPECT_LT(reinterpret_cast<uintptr_t>(block), heap.huge_pages_from() + 4096) << "the first huge page's start";
    free(block);
}
