// One libFuzzer target per parser that reads outside data. A target is one
// small file in tests/fuzz/targets/<name>.cpp:
//
//   #include "tests/fuzz/fuzz_target.hpp"
//   #include "collectors/procfs/diskstats.hpp"
//
//   IODIAG_FUZZ_TARGET(diskstats) {            // (const uint8_t* data, size_t size)
//       const std::string text = iodiag::fuzz::text(data, size);
//       iodiag::fuzz::rejects_with<iodiag::SourceError>("/proc/diskstats", [&] {
//           iodiag::parse_diskstats(text, "/proc/diskstats");
//       });
//   }
//
// plus its seeds in tests/fuzz/corpus/<name>/ (tests/fuzz/make_seeds.py writes
// them from tests/fixtures). Every crash found goes into
// tests/fuzz/regressions/<name>/ with its fix.
//
// The same file is built two ways (tests/fuzz/fuzz.cmake):
//  - with clang and -DIODIAG_FUZZ=ON, as the libFuzzer binary fuzz_<name>;
//  - in every build (gcc too), into iodiag_fuzz_replay, a GoogleTest binary
//    that runs each target over its seeds and regression inputs, so a fixed
//    crash stays fixed without clang.
//
// What a target checks beyond "no crash, no hang, no leak, no undefined
// behaviour": a parser may reject its input only with its documented error
// type, and that error names where (the path); any other exception escapes
// and is reported as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace iodiag::fuzz {

using TargetFn = void (*)(const uint8_t* data, size_t size);

// Targets registered in this binary (the replay build registers them all).
std::map<std::string, TargetFn>& registry();
struct Registration {
    Registration(const char* name, TargetFn fn) { registry()[name] = fn; }
};

// The input as text (may hold NUL bytes and invalid UTF-8, as a broken file can).
inline std::string text(const uint8_t* data, size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

// Stops the run: the message goes to stderr and the process aborts, which
// libFuzzer (and the replay test) report as a crash with this input.
[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "iodiag fuzz target: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

// Runs fn(). Returns true when it accepted the input, false when it rejected it
// with an Error whose message contains `must_name` (a path; "" = no check).
// Any other exception propagates: not a documented rejection.
template <class Error, class Fn>
bool rejects_with(const std::string& must_name, Fn&& fn) {
    try {
        fn();
        return true;
    } catch (const Error& e) {
        const std::string what = e.what();
        if (!must_name.empty() && what.find(must_name) == std::string::npos)
            fail("error does not say where (expected '" + must_name + "' in it): " + what);
        return false;
    }
}

}  // namespace iodiag::fuzz

#ifdef IODIAG_LIBFUZZER
#define IODIAG_FUZZ_TARGET(name)                                                         \
    static void iodiag_fuzz_##name(const uint8_t* data, size_t size);                   \
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {           \
        iodiag_fuzz_##name(data, size);                                                  \
        return 0;                                                                        \
    }                                                                                    \
    static void iodiag_fuzz_##name([[maybe_unused]] const uint8_t* data, [[maybe_unused]] size_t size)
#else
#define IODIAG_FUZZ_TARGET(name)                                                         \
    static void iodiag_fuzz_##name(const uint8_t* data, size_t size);                   \
    static const ::iodiag::fuzz::Registration iodiag_fuzz_registration_##name(#name,     \
                                                                             iodiag_fuzz_##name); \
    static void iodiag_fuzz_##name([[maybe_unused]] const uint8_t* data, [[maybe_unused]] size_t size)
#endif

#include <cmath>

#include "engine/evidence/evidence.hpp"

namespace iodiag::fuzz {

// What a collector appends must be true of any machine: finite numbers (a NaN
// or an infinity from a division by a zero window or a garbage counter is a
// bug, whatever the input).
inline void require_finite(const Evidence& ev) {
    for (const auto& m : ev.metrics)
        if (!std::isfinite(m.value)) fail("metric " + m.name + " is not finite");
    for (const auto& e : ev.exemplars)
        for (const auto& [k, v] : e.values)
            if (!std::isfinite(v)) fail("exemplar value " + k + " is not finite");
    for (const auto& v : ev.series.values)
        for (double x : v.intervals)
            if (!std::isfinite(x)) fail("series " + v.name + " holds a value that is not finite");
}

// Splits "before\n--\nafter" into two snapshots (after = before when there is
// no separator line): the snapshot collectors report deltas between two reads.
inline std::pair<std::string, std::string> two_snapshots(const std::string& text) {
    const std::string sep = "\n--\n";
    const auto at = text.find(sep);
    if (at == std::string::npos) return {text, text};
    return {text.substr(0, at + 1), text.substr(at + sep.size())};
}

}  // namespace iodiag::fuzz
