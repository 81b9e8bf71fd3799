// The kernel's HZ (jiffies per second), needed to turn jiffies-valued
// tracepoint fields (jbd2_run_stats, balance_dirty_pages pause) into time.
// Not USER_HZ (sysconf(_SC_CLK_TCK) is always 100 for user space).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace iodiag {

struct KernelHz {
    int hz = 0;           // 0 = unknown
    std::string source;   // e.g. "CONFIG_HZ in /proc/config.gz", "measured from /proc/timer_list"
};

// CONFIG_HZ=<n> from kernel config text; nullopt when absent.
std::optional<int> parse_config_hz(const std::string& config_text);
// (jiffies, "now at" nanoseconds) from the text of /proc/timer_list; nullopt
// when either is missing or not a number.
std::optional<std::pair<double, double>> parse_timer_list(const std::string& timer_list_text);
// Tries /boot/config-<release>, then /proc/config.gz (zlib), then
// measures jiffies against the monotonic clock in /proc/timer_list over ~100 ms.
KernelHz find_kernel_hz(const std::string& root = "/");

}  // namespace iodiag
