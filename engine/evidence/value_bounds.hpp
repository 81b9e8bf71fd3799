// What a recorded value can be. A bundle is evidence for a ticket: a value no
// collector can produce is refused when the bundle is read (bundle.cpp), like
// malformed JSON, with its JSON path. The bounds follow from what a unit
// measures and from what the kernel can hand a collector, not from figures
// tuned to the recorded fixtures.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace iodiag {

// What a metric's unit says it measures.
enum class Quantity {
    Count,   // count, requests, pages
    Size,    // bytes, KiB, data units (NVMe's 512,000 bytes)
    Time,    // us, ms, cs, s, min, h, days
    Rate,    // 1/s (events), bytes/s, B/s, cores (CPU seconds per second)
    Share,   // pct, x, ratio
    Other,   // degC, K, bool, mode, bitmask, "" (a sysctl's plain number): no bound here
    Unknown  // a unit iodiag does not write: not judged
};
Quantity quantity_of(const std::string& unit);

// Whether the metric is the difference of two figures, the only kind of
// count, size, time, rate or share that can be negative. Its name says so:
// "_change" (tonight minus an earlier run) and "_per_day" (that change per
// day), "_margin" and "_headroom" (a figure minus its threshold).
bool is_difference(const std::string& metric_name);

// The most of each kind of rate that any machine produces. Every event the
// kernel counts (a request, a syscall, a page, a context switch) costs some
// CPU at least one cycle, and no machine's memory carries a page per CPU per
// cycle, which every byte the kernel counts passes through.
inline constexpr double kMostCpus = 8192;          // NR_CPUS_RANGE_END of the x86-64 and arm64 kernels
inline constexpr double kFastestClockHz = 10e9;    // above any CPU's clock
inline constexpr double kMostEventsPerSecond = kMostCpus * kFastestClockHz;
inline constexpr double kMostBytesPerSecond = kMostEventsPerSecond * 4096;

// Why `value` cannot have been recorded for the metric `name` in `unit`, as
// the "expected ..." of an error ("expected a number >= 0 (a rate, 1/s)");
// nullopt when it can: negative counts, sizes, times, rates and shares that
// are not differences, and rates beyond the bounds above.
std::optional<std::string> impossible_value(const std::string& name, const std::string& unit, double value);

// The longest label a collector writes, in characters (UTF-8 code points: a
// byte that is not UTF-8 is written as one U+FFFD, bundle_text). Labels are
// names (a command is at most 15 bytes, TASK_COMM_LEN; a disk 31,
// DISK_NAME_LEN) and paths the kernel hands out, each shorter than PATH_MAX
// (4096 with its NUL); the longest is the cgroup v1 label, which joins two
// of them: "memory:<path>,blkio:<path>" (collectors/cgroup/cgroup_label.cpp).
inline constexpr size_t kPathMax = 4096;
inline constexpr size_t kMaxLabelChars =
    std::string_view("memory:").size() + (kPathMax - 1) + std::string_view(",blkio:").size() + (kPathMax - 1);
// Characters (code points) of a UTF-8 text (a JSON parse has checked it is UTF-8).
size_t utf8_length(const std::string& text);

}  // namespace iodiag
