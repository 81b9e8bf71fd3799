#include "engine/evidence/recordable.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "engine/evidence/value_bounds.hpp"

namespace iodiag {

namespace {

std::string shown(const std::string& name, const Labels& labels) {
    std::string out = name + "{";
    for (const auto& [k, v] : labels) out += (out.back() == '{' ? "" : ",") + k + "=" + v.substr(0, 80);
    return out + "}";
}

// At most kMaxLabelChars bytes (so as many characters at most), not ending
// inside a UTF-8 sequence.
bool cut_long_labels(Labels& labels) {
    bool cut = false;
    for (auto& [key, value] : labels) {
        if (utf8_length(value) <= kMaxLabelChars) continue;
        size_t end = kMaxLabelChars;
        while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
        value.resize(end);
        cut = true;
    }
    return cut;
}

// Keeps the first entry of each series (name and labels), removes the others.
template <typename T>
void keep_first_of_each_series(std::vector<T>& entries, const char* kind, std::vector<std::string>& done) {
    std::set<std::pair<std::string, Labels>> seen;
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const T& e) {
                                     if (seen.insert({e.name, e.labels}).second) return false;
                                     done.push_back(std::string(kind) + " " + shown(e.name, e.labels) +
                                                    " written twice: the first kept");
                                     return true;
                                 }),
                  entries.end());
}

}  // namespace

std::vector<std::string> drop_unrecordable(Evidence& ev) {
    std::vector<std::string> done;
    auto cut = [&](Labels& l, const std::string& name) {
        if (cut_long_labels(l))
            done.push_back(shown(name, l) + ": a label longer than any a collector writes, cut to " +
                           std::to_string(kMaxLabelChars) + " characters");
    };
    for (auto& m : ev.metrics) cut(m.labels, m.name);
    for (auto& f : ev.facts) cut(f.labels, f.name);
    for (auto& h : ev.histograms) cut(h.labels, h.name);
    ev.metrics.erase(std::remove_if(ev.metrics.begin(), ev.metrics.end(),
                                    [&](const Metric& m) {
                                        // JSON has no NaN or infinity: a bundle would hold null.
                                        const auto why = std::isfinite(m.value)
                                                             ? impossible_value(m.name, m.unit, m.value)
                                                             : std::optional<std::string>("a finite number");
                                        if (why) done.push_back(shown(m.name, m.labels) + " = " + std::to_string(m.value) +
                                                                ": expected " + *why + ", left out");
                                        return why.has_value();
                                    }),
                     ev.metrics.end());
    keep_first_of_each_series(ev.metrics, "metric", done);
    keep_first_of_each_series(ev.facts, "fact", done);
    keep_first_of_each_series(ev.histograms, "histogram", done);
    return done;
}

}  // namespace iodiag
