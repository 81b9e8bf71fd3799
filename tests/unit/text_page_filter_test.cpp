// The wait classifier's text-page bitmap: every address inside a classified
// function is on a marked page (the BPF side then skips the search only where
// it would find nothing), and pages far from every function are not marked.
#include <gtest/gtest.h>

#include "bpf/syscall_events.h"
#include "collectors/bpf/text_page_filter.hpp"

using namespace iodiag;

namespace {

KernelSymbolRange range(uint64_t start, uint64_t end) { return {start, end, "f", 1}; }

void expect_every_byte_marked(const TextPageFilter& f, const std::vector<KernelSymbolRange>& ranges) {
    for (const auto& r : ranges)
        for (uint64_t ip = r.start; ip < r.end; ip += 61) {   // a stride that lands on every page
            ASSERT_TRUE(f.marked(ip)) << std::hex << ip;
            ASSERT_TRUE(f.marked(r.end - 1)) << std::hex << r.end - 1;
        }
}

}  // namespace

TEST(TextPageFilter, MarksThePagesOfEveryRangeAndNoFarPage) {
    const uint64_t text = 0xffffffff81000000ull;
    const std::vector<KernelSymbolRange> ranges = {range(text + 0x1f80, text + 0x2100),   // across a page boundary
                                                   range(text + 0x5000, text + 0x5040),
                                                   range(text + 0x900000, text + 0x901000)};
    const auto f = text_page_filter(ranges, IOD_RANGE_PAGE_WORDS);
    EXPECT_EQ(f.shift, 12u);   // 9 MiB of text fits the bitmap at 4 KiB pages
    expect_every_byte_marked(f, ranges);
    EXPECT_FALSE(f.marked(text + 0x3000));       // a page between two functions
    EXPECT_FALSE(f.marked(text + 0x0fff));       // below the lowest function's page (wraps)
    EXPECT_FALSE(f.marked(text + 0x902000));     // above the highest
    EXPECT_FALSE(f.marked(0));
    EXPECT_TRUE(f.marked(text + 0x5fff));        // the same page as a function: "search", not "found"
}

TEST(TextPageFilter, WiderSpansUseLargerPagesAndStayExact) {
    // a module's function ~1 GiB above the core text
    const std::vector<KernelSymbolRange> ranges = {range(0xffffffff81200000ull, 0xffffffff81200400ull),
                                                   range(0xffffffffc0a13000ull, 0xffffffffc0a13a00ull)};
    const auto f = text_page_filter(ranges, IOD_RANGE_PAGE_WORDS);
    EXPECT_GT(f.shift, 12u);
    EXPECT_LT((0xffffffffc0a139ffull - f.base) >> f.shift, uint64_t{IOD_RANGE_PAGE_WORDS} * 64);
    expect_every_byte_marked(f, ranges);
    EXPECT_FALSE(f.marked(0xffffffffa0000000ull));
}

TEST(TextPageFilter, NoRangesMarkNothing) {
    const auto f = text_page_filter({}, IOD_RANGE_PAGE_WORDS);
    EXPECT_FALSE(f.marked(0xffffffff81000000ull));
    EXPECT_FALSE(f.marked(0));
    const auto empty_range = text_page_filter({range(0x1000, 0x1000)}, IOD_RANGE_PAGE_WORDS);
    EXPECT_FALSE(empty_range.marked(0x1000));
}
