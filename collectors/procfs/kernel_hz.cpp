#include "collectors/procfs/kernel_hz.hpp"

#include <sys/utsname.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "collectors/text_file.hpp"

namespace iodiag {

std::optional<int> parse_config_hz(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("CONFIG_HZ=", 0) == 0) {
            try {
                const int hz = std::stoi(line.substr(10));
                if (hz > 0) return hz;
            } catch (...) {
            }
        }
    }
    return std::nullopt;
}

namespace {
// The decimal number between `before` and `after` at their first occurrence
// in text (after = "" : up to the first non-digit); nullopt when absent or too
// long for a double. std::regex is avoided: libstdc++'s recurses per character
// matched, which a long run of digits turns into a stack overflow.
std::optional<double> number_between(const std::string& text, const std::string& before, const std::string& after) {
    const auto at = text.find(before);
    if (at == std::string::npos) return std::nullopt;
    const auto begin = at + before.size();
    const auto end = std::min(text.find_first_not_of("0123456789", begin), text.size());
    if (end == begin || text.compare(end, after.size(), after) != 0) return std::nullopt;
    const double v = std::strtod(text.substr(begin, end - begin).c_str(), nullptr);
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}
}  // namespace

std::optional<std::pair<double, double>> parse_timer_list(const std::string& text) {
    const auto now = number_between(text, "now at ", " nsecs");
    const auto jiffies = number_between(text, "\njiffies: ", "");
    if (!now || !jiffies) return std::nullopt;
    return std::make_pair(*jiffies, *now);
}

namespace {

// The whole decompressed text of a gzip file, or nullopt when it cannot be
// read or is corrupt. zlib in process: a `gzip -dc` child cost the collector's
// start a fork and two execs.
std::optional<std::string> gunzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) return std::nullopt;
    std::string out;
    char buf[65536];
    int n;
    while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    const int closed = gzclose(f);
    return n == 0 && closed == Z_OK ? std::optional<std::string>(out) : std::nullopt;
}

// (jiffies, now ns) from /proc/timer_list.
std::optional<std::pair<double, double>> timer_list_sample(const std::string& path) {
    auto t = try_read_text_file(path);
    if (!t) return std::nullopt;
    return parse_timer_list(*t);
}

}  // namespace

KernelHz find_kernel_hz(const std::string& root) {
    struct utsname u {};
    if (uname(&u) == 0) {
        const std::string boot = under_root(root, std::string("/boot/config-") + u.release);
        if (auto t = try_read_text_file(boot))
            if (auto hz = parse_config_hz(*t)) return {*hz, "CONFIG_HZ in " + boot};
    }
    const std::string gz = under_root(root, "/proc/config.gz");
    if (auto t = gunzip(gz))
        if (auto hz = parse_config_hz(*t)) return {*hz, "CONFIG_HZ in " + gz};
    const std::string tl = under_root(root, "/proc/timer_list");
    auto a = timer_list_sample(tl);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto b = timer_list_sample(tl);
    if (a && b && b->second > a->second) {
        const double hz = (b->first - a->first) / ((b->second - a->second) / 1e9);
        // Round to the configurable values.
        int best = 0;
        for (int c : {100, 250, 300, 1000})
            if (best == 0 || std::fabs(hz - c) < std::fabs(hz - best)) best = c;
        return {best, "measured: jiffies vs monotonic clock in " + tl};
    }
    return {0, "unknown (no kernel config, " + tl + " unreadable)"};
}

}  // namespace iodiag
