// Every fuzz target over its seeds and crash reproducers, in every build (gcc
// included): a crash once found stays fixed, and the targets themselves stay
// buildable without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_target.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> target_names() {
    std::vector<std::string> names;
    for (const auto& [name, fn] : iodiag::fuzz::registry()) names.push_back(name);
    return names;
}

std::vector<fs::path> inputs_of(const std::string& target) {
    std::vector<fs::path> files;
    for (const char* kind : {"corpus", "regressions"}) {
        const fs::path dir = fs::path(IODIAG_FUZZ_DIR) / kind / target;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

class FuzzInputs : public testing::TestWithParam<std::string> {};

TEST_P(FuzzInputs, SeedsAndRegressionsRunClean) {
    const auto fn = iodiag::fuzz::registry().at(GetParam());
    const auto files = inputs_of(GetParam());
    ASSERT_FALSE(files.empty()) << "no seeds in tests/fuzz/corpus/" << GetParam();
    for (const auto& f : files) {
        // A failing input aborts the process, which GoogleTest cannot report:
        // each is named before it runs, so the last one named is the culprit.
        std::fprintf(stderr, "input %s\n", f.c_str());
        std::ifstream in(f, std::ios::binary);
        const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        fn(bytes.data(), bytes.size());
    }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzInputs, testing::ValuesIn(target_names()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
