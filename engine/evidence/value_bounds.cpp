#include "engine/evidence/value_bounds.hpp"

#include <cstdio>
#include <map>

#include "engine/evidence/format.hpp"

namespace iodiag {

namespace {
// 8.19e+13: bounds are far from the figures they are compared with.
std::string roughly(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}
}  // namespace

Quantity quantity_of(const std::string& unit) {
    static const std::map<std::string, Quantity> by_unit{
        {"count", Quantity::Count}, {"requests", Quantity::Count}, {"pages", Quantity::Count},
        {"bytes", Quantity::Size},  {"KiB", Quantity::Size},       {"data units", Quantity::Size},
        {"us", Quantity::Time},     {"ms", Quantity::Time},        {"cs", Quantity::Time},
        {"s", Quantity::Time},      {"min", Quantity::Time},       {"h", Quantity::Time},
        {"days", Quantity::Time},   {"1/s", Quantity::Rate},       {"bytes/s", Quantity::Rate},
        {"B/s", Quantity::Rate},    {"cores", Quantity::Rate},     {"pct", Quantity::Share},
        {"x", Quantity::Share},     {"ratio", Quantity::Share},    {"degC", Quantity::Other},
        {"K", Quantity::Other},     {"bool", Quantity::Other},     {"mode", Quantity::Other},
        {"bitmask", Quantity::Other}, {"", Quantity::Other}};
    const auto it = by_unit.find(unit);
    return it == by_unit.end() ? Quantity::Unknown : it->second;
}

bool is_difference(const std::string& metric_name) {
    for (const char* word : {"_change", "_per_day", "_margin", "_headroom"})
        if (metric_name.find(word) != std::string::npos) return true;
    return false;
}

std::optional<std::string> impossible_value(const std::string& name, const std::string& unit, double value) {
    const Quantity q = quantity_of(unit);
    static const std::map<Quantity, const char*> kind{{Quantity::Count, "a count"}, {Quantity::Size, "a size"},
                                                     {Quantity::Time, "a time"},   {Quantity::Rate, "a rate"},
                                                     {Quantity::Share, "a share"}};
    if (!kind.count(q)) return std::nullopt;
    const std::string what = std::string(kind.at(q)) + ", " + unit;
    if (value < 0 && !is_difference(name)) return "a number >= 0 (" + what + ")";
    if (q != Quantity::Rate) return std::nullopt;
    if (unit == "1/s" && value > kMostEventsPerSecond)
        return "at most " + roughly(kMostEventsPerSecond) + " (" + what +
               ": an event per cycle of " + format_number(kMostCpus) + " CPUs at " +
               format_number(kFastestClockHz / 1e9) + " GHz, more than any machine)";
    if ((unit == "bytes/s" || unit == "B/s") && value > kMostBytesPerSecond)
        return "at most " + roughly(kMostBytesPerSecond) + " (" + what + ": a page per cycle of " +
               format_number(kMostCpus) + " CPUs at " + format_number(kFastestClockHz / 1e9) +
               " GHz, more than any machine's memory carries)";
    if (unit == "cores" && value > kMostCpus)
        return "at most " + format_number(kMostCpus) + " (" + what + ": the most CPUs a kernel is built for)";
    return std::nullopt;
}

size_t utf8_length(const std::string& text) {
    size_t n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80;
    return n;
}

}  // namespace iodiag
