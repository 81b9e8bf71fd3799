#include "engine/evidence/format.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace iodiag {

std::string format_number(double v) {
    char buf[64];
    const double a = std::fabs(v);
    if (a >= 1000 || a == std::floor(a))
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (a >= 100)
        std::snprintf(buf, sizeof buf, "%.1f", v);
    else if (a >= 10)
        std::snprintf(buf, sizeof buf, "%.1f", v);
    else if (a >= 1)
        std::snprintf(buf, sizeof buf, "%.2f", v);
    else
        std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

namespace {
std::string utc(double unix_s, const char* format) {
    const std::time_t t = static_cast<std::time_t>(unix_s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, format, &tm);
    return buf;
}
}  // namespace

std::string format_utc(double unix_s) { return utc(unix_s, "%Y-%m-%d %H:%M:%S UTC"); }

std::string format_utc_stamp(double unix_s) { return utc(unix_s, "%Y%m%dT%H%M%SZ"); }

std::string format_value(double v, const std::string& unit) {
    if (unit == "bytes" || unit == "bytes/s") {
        const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int i = 0;
        while (std::fabs(v) >= 1024 && i < 4) {
            v /= 1024;
            ++i;
        }
        return format_number(v) + " " + units[i] + (unit == "bytes" ? "" : "/s");
    }
    if (unit == "pct") return format_number(v) + " %";
    // A ratio reads as a bare number: the text around it says what of what
    // ("3.4 times a write"), and "3.4 ratio times" did not read.
    if (unit.empty() || unit == "count" || unit == "ratio") return format_number(v);
    return format_number(v) + " " + unit;
}

std::string upper_case(std::string word) {
    for (auto& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return word;
}

}  // namespace iodiag
