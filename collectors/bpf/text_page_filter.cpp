#include "collectors/bpf/text_page_filter.hpp"

#include <algorithm>

namespace iodiag {

bool TextPageFilter::marked(uint64_t ip) const {
    const uint64_t page = (ip - base) >> (shift & 63);   // below the base wraps to far above
    return page < words.size() * 64 && ((words[page / 64] >> (page % 64)) & 1);
}

TextPageFilter text_page_filter(const std::vector<KernelSymbolRange>& ranges, size_t words) {
    TextPageFilter f;
    f.words.assign(words, 0);
    uint64_t lo = UINT64_MAX, hi = 0;   // [lo, hi] = every classified byte
    for (const auto& r : ranges) {
        if (r.end <= r.start) continue;
        lo = std::min(lo, r.start);
        hi = std::max(hi, r.end - 1);
    }
    const uint64_t bits = static_cast<uint64_t>(words) * 64;
    if (lo > hi || bits == 0) return f;   // nothing marked: every frame skips the search
    uint32_t shift = 12;   // pages aligned to their size, from the lowest function's
    while (shift < 63 && ((hi - (lo & ~((uint64_t{1} << shift) - 1))) >> shift) >= bits) ++shift;
    f.base = lo & ~((uint64_t{1} << shift) - 1);
    f.shift = shift;
    for (const auto& r : ranges) {
        if (r.end <= r.start) continue;
        for (uint64_t page = (r.start - f.base) >> shift; page <= (r.end - 1 - f.base) >> shift; ++page)
            f.words[page / 64] |= uint64_t{1} << (page % 64);
    }
    return f;
}

}  // namespace iodiag
