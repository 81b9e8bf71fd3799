// A bitmap of the kernel text pages that hold any of a set of functions, so
// that the wait classifier (bpf/syscall.bpf.c, classify_frames) binary-searches
// its function ranges only for stack frames on such a page.
//
// Exact by construction: every address inside a range has its page's bit set
// (no false "not here"); a set bit only means "search", and other functions on
// the same page are found absent by the search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectors/bpf/kallsyms.hpp"

namespace iodiag {

struct TextPageFilter {
    uint64_t base = 0;    // address of bit 0
    uint32_t shift = 0;   // bit = (ip - base) >> shift
    std::vector<uint64_t> words;

    // Whether `ip`'s page is marked (what the BPF program tests).
    bool marked(uint64_t ip) const;
};

// The bitmap of `words` 64-bit words over `ranges` ([start, end) each): pages
// of 4 KiB, or larger (powers of two) when the ranges span more than the
// bitmap covers at 4 KiB (e.g. functions in modules far from the core text).
TextPageFilter text_page_filter(const std::vector<KernelSymbolRange>& ranges, size_t words);

}  // namespace iodiag
