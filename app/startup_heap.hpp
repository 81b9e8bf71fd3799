// The memory the BPF collectors' start-up allocates, served with few page faults.
//
// Most of a start's CPU time was page faults, not work: libbpf parses the
// kernel's BTF (/sys/kernel/btf/vmlinux, 5-6 MiB) once for every BPF object it
// loads, into freshly allocated buffers (the file read, a copy, the type
// index), and glibc serves blocks that size with mmap and gives them back with
// munmap, so four parses fault in ~12 MiB each, 4 KiB at a time: ~13,000 faults
// for `iodiag --duration 1`, costly on a VM. While a StartupHeap lives, large
// blocks come from one heap region advised to use transparent huge pages
// (one fault per 2 MiB), and a buffer freed by one parse is reused by the next.
//
//   share_one_malloc_arena();   // first thing in main(), before any thread
//   std::optional<StartupHeap> heap{std::in_place};
//   start the collectors; open the window; heap.reset();   // then trimmed
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace iodiag::cli {

// All threads allocate from glibc's main arena (the one StartupHeap prepares);
// per-thread arenas would each fault their own memory in. Must run before the
// process starts a thread.
void share_one_malloc_arena();

class StartupHeap {
public:
    StartupHeap();
    // Hands the start-up's free memory back to the kernel and restores glibc's
    // default thresholds, so the window runs with the usual footprint.
    ~StartupHeap();
    // Where the heap's huge pages start (the next blocks come from there);
    // 0 when the region is on 4 KiB pages.
    uintptr_t huge_pages_from() const { return huge_from_; }
    StartupHeap(const StartupHeap&) = delete;
    StartupHeap& operator=(const StartupHeap&) = delete;

private:
    // The transparent huge page's size when the kernel has THP and the buddy
    // allocator enough free huge blocks; else 0 (the reason logged).
    static size_t plenty_of_huge_pages();
    bool tuned_ = false;
    uintptr_t huge_from_ = 0;
    void* below_huge_ = nullptr;   // the block that grew the heap, up to its first huge page
};

// Free blocks of at least 2^order pages in /proc/buddyinfo's text, counted in
// blocks of exactly 2^order pages (an order+1 block is two). 0 when unreadable.
size_t free_blocks_of_order(std::string_view buddyinfo, unsigned order);

}  // namespace iodiag::cli
