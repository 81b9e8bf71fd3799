#include "app/startup_heap.hpp"

#include <cstdint>
#include <sstream>
#include <string>

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collectors/text_file.hpp"

namespace iodiag::cli {

namespace {

// Room for every BPF object's BTF parse at once (they load in parallel).
constexpr size_t kStartHeapBytes = 64u << 20;
// Blocks up to this size come from the heap while starting; glibc's largest
// allowed value (half its 64 MiB heap), above one BTF parse's buffers.
constexpr int kStartMmapThreshold = 32 << 20;
// glibc's documented defaults for the three, restored after the start.
constexpr int kDefaultThreshold = 128 << 10;

// log2(transparent huge page / base page), or 0 when the kernel has no THP.
unsigned huge_page_order() {
    const std::string text = try_read_text_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size").value_or("");
    const long page = sysconf(_SC_PAGESIZE);
    unsigned long huge = 0;
    try {
        huge = std::stoul(text);
    } catch (const std::exception&) {
        return 0;
    }
    unsigned order = 0;
    while (page > 0 && (static_cast<unsigned long>(page) << order) < huge) ++order;
    return (static_cast<unsigned long>(page) << order) == huge ? order : 0;
}

uintptr_t align_up(uintptr_t v, uintptr_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

void share_one_malloc_arena() { mallopt(M_ARENA_MAX, 1); }

size_t free_blocks_of_order(std::string_view buddyinfo, unsigned order) {
    // "Node 0, zone   Normal   2859 3389 ... 315": free blocks of order 0, 1, ...
    size_t blocks = 0;
    std::istringstream lines{std::string(buddyinfo)};
    for (std::string line; std::getline(lines, line);) {
        const auto zone = line.find("zone");
        if (zone == std::string::npos) continue;
        std::istringstream fields(line.substr(zone + 4));
        std::string name;
        fields >> name;
        size_t count = 0;
        for (unsigned o = 0; fields >> count; ++o)
            if (o >= order && o - order < 8 * sizeof(size_t) - 1) blocks += count << (o - order);
    }
    return blocks;
}

StartupHeap::StartupHeap() {
    if (mallopt(M_MMAP_THRESHOLD, kStartMmapThreshold) != 1 || mallopt(M_TRIM_THRESHOLD, 4 * kStartHeapBytes) != 1 ||
        mallopt(M_TOP_PAD, kStartHeapBytes) != 1)
        return;   // another allocator (a sanitizer's): nothing to tune
    tuned_ = true;
    // Extend the heap once by the whole start-up region (the top pad): a
    // block larger than all the heap's free memory together makes malloc
    // grow the heap, and writes nothing into the region but the new top's
    // header right after the block (a 2 MiB range with one 4 KiB page
    // present would fault in 4 KiB pages ever after).
    void* block = malloc(mallinfo2().fordblks + 4096);
    if (!block) return;
    const uintptr_t to = reinterpret_cast<uintptr_t>(sbrk(0));
    const uintptr_t first_huge = advise_huge_pages(reinterpret_cast<uintptr_t>(block) + malloc_usable_size(block) + 64, to);
    free(block);
    // The next blocks come from the heap's top, below the first huge page
    // (up to 2 MiB in 4 KiB pages, each faulted on its own: ~350 faults of a
    // start here): a block never touched but for its header fills the gap
    // (glibc's layout: a request of n bytes takes n + 8 rounded up to 16
    // from the top, whose rest then starts where it ends).
    const uintptr_t top = to - mallinfo2().keepcost;
    if (first_huge >= top + 64 && first_huge - top <= (2u << 20)) below_huge_ = malloc(first_huge - top - 8);
    huge_from_ = first_huge;
}

uintptr_t StartupHeap::advise_huge_pages(uintptr_t from, uintptr_t to) {
    const unsigned order = huge_page_order();
    if (order == 0 || to <= from || to - from > 4 * kStartHeapBytes) {
        spdlog::debug("start-up heap: 4 KiB pages (THP order {}, heap not in one piece)", order);
        return 0;
    }
    // A huge-page fault with no free 2 MiB block compacts or reclaims memory
    // first: on a machine short of memory (which iodiag may be diagnosing)
    // that would stall the start and push on the workload. Only with plenty
    // of free huge blocks, twice the region.
    const size_t huge = static_cast<size_t>(sysconf(_SC_PAGESIZE)) << order;
    const size_t free_huge = free_blocks_of_order(try_read_text_file("/proc/buddyinfo").value_or(""), order);
    if (free_huge < 2 * kStartHeapBytes / huge) {
        spdlog::debug("start-up heap: 4 KiB pages ({} free {} KiB blocks in /proc/buddyinfo, want {})", free_huge,
                      huge >> 10, 2 * kStartHeapBytes / huge);
        return 0;
    }
    const uintptr_t first = align_up(from, huge), last = to & ~(huge - 1);
    if (last <= first || madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) != 0) return 0;
    spdlog::debug("start-up heap: {} MiB on transparent huge pages", (last - first) >> 20);
    return first;
}

StartupHeap::~StartupHeap() {
    if (!tuned_) return;
    free(below_huge_);
    mallopt(M_MMAP_THRESHOLD, kDefaultThreshold);
    mallopt(M_TRIM_THRESHOLD, kDefaultThreshold);
    mallopt(M_TOP_PAD, kDefaultThreshold);
    malloc_trim(0);
}

}  // namespace iodiag::cli
