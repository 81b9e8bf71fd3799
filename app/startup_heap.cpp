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
    // Decided first: its reads allocate, and nothing may come from the heap's
    // top between the block below and its growing.
    const size_t huge = plenty_of_huge_pages();
    // Extend the heap once by the whole start-up region (the top pad): a
    // block larger than all the heap's free memory together makes malloc
    // grow the heap, and the region is the free top right after it.
    void* block = malloc(mallinfo2().fordblks + 4096);
    if (!block) return;
    below_huge_ = block;
    const uintptr_t start = reinterpret_cast<uintptr_t>(block);
    const uintptr_t end = start + malloc_usable_size(block), to = reinterpret_cast<uintptr_t>(sbrk(0));
    if (!huge) return;
    if (to <= end || to - end > 4 * kStartHeapBytes) {
        spdlog::debug("start-up heap: 4 KiB pages (heap not in one piece)");
        return;
    }
    // From the first huge page after the block's end: malloc wrote the free
    // top's header there, and a 2 MiB range with one 4 KiB page present
    // faults in 4 KiB pages ever after (512 faults here).
    const uintptr_t first = align_up(end + 64, huge), last = to & ~(huge - 1);
    if (last <= first || madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) != 0) return;
    // The next blocks would start right after the block, below the first
    // huge page (up to 2 MiB in 4 KiB pages, each faulted on its own: ~350
    // faults of a start here). The block grows in place into the top until
    // it ends there (glibc: a request of n bytes is a chunk of n + 8 rounded
    // up to 16, from 16 bytes before the block); none of it is touched.
    if (void* grown = realloc(block, first - start + 8)) below_huge_ = grown;
    huge_from_ = first;
    spdlog::debug("start-up heap: {} MiB on transparent huge pages", (last - first) >> 20);
}

size_t StartupHeap::plenty_of_huge_pages() {
    const unsigned order = huge_page_order();
    if (order == 0) {
        spdlog::debug("start-up heap: 4 KiB pages (no transparent huge pages)");
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
    return huge;
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
