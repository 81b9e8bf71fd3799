#include "engine/evidence/bundle.hpp"
#include "engine/evidence/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unistd.h>
#include <utility>

#include "engine/evidence/format.hpp"
#include "engine/evidence/json_path.hpp"
#include "engine/evidence/json_text.hpp"
#include "engine/evidence/value_bounds.hpp"

namespace iodiag {

using nlohmann::json;

namespace {

json provenance_json(const Provenance& p) { return {{"kind", p.kind}, {"source", p.source}}; }

// Every reader below takes a JsonAt, so that whatever is wrong is reported
// with its path in the bundle ("metrics[12].value: expected a number, got null").

Provenance provenance_from(const JsonAt& j) { return {j.at("kind").string(), j.at("source").string()}; }

std::string longer_than_any_label(size_t chars, const char* what) {
    return std::string(what) + " of " + std::to_string(chars) + " characters, longer than any a collector writes (" +
           std::to_string(kMaxLabelChars) + ": a cgroup v1 label, two paths under PATH_MAX)";
}

// A label longer than any collector writes is refused: a name whose text
// nobody recorded. A name too long is reported at the labels object, so that
// the path does not carry it.
Labels labels_from(const JsonAt& item) {
    auto l = item.find("labels");
    if (!l) return {};
    Labels labels = l->string_map();
    for (const auto& [key, value] : labels) {
        if (const size_t n = utf8_length(key); n > kMaxLabelChars) l->fail(longer_than_any_label(n, "a label name"));
        if (const size_t n = utf8_length(value); n > kMaxLabelChars)
            l->at(key).fail(longer_than_any_label(n, "a label"));
    }
    return labels;
}

// A value no collector records (value_bounds.hpp) is refused with its path.
double recorded_value(const JsonAt& at, const std::string& name, const std::string& unit) {
    const double v = at.number();
    if (auto expected = impossible_value(name, unit, v))
        at.fail("expected " + *expected + ", got " + describe_json(at.json()));
    return v;
}

// Each series (a name with its labels) once per kind of entry: the evidence
// looks them up by both, so a second one would be read as the first, whatever
// it said. A collector writes each once.
class OncePerSeries {
public:
    void check(const JsonAt& at, const std::string& name, const Labels& labels) {
        const auto [first, fresh] = paths_.try_emplace({name, labels}, at.path());
        if (!fresh)
            at.fail(name + " again, with the same labels as " + first->second +
                    ": a collector writes each series once");
    }

private:
    std::map<std::pair<std::string, Labels>, std::string> paths_;
};

// Log2 bucket counts: at most Log2Histogram::kMaxBuckets counts, each an
// integer >= 0, whose sum fits the counter.
Log2Histogram histogram_from(const JsonAt& buckets) {
    if (buckets.array_size() > static_cast<size_t>(Log2Histogram::kMaxBuckets))
        buckets.fail("expected at most " + std::to_string(Log2Histogram::kMaxBuckets) + " log2 buckets, got " +
                     std::to_string(buckets.array_size()));
    std::vector<uint64_t> counts;
    uint64_t total = 0;
    buckets.each([&](const JsonAt& b) {
        const uint64_t c = b.count();
        if (c > UINT64_MAX - total) b.fail("the bucket counts add up past 2^64: not counts of anything");
        total += c;
        counts.push_back(c);
    });
    Log2Histogram h;
    h.set_buckets(std::move(counts));
    return h;
}

// A value of an exemplar named like a duration ("q2c_us", "total_ns") is a
// measured time: it cannot be negative.
bool is_duration_key(const std::string& key) {
    for (const char* suffix : {"_us", "_ns", "_ms", "_s"}) {
        const std::string sfx = suffix;
        if (key.size() > sfx.size() && key.compare(key.size() - sfx.size(), sfx.size(), sfx) == 0) return true;
    }
    return false;
}

json series_to_json(const Series& s) {
    json j = {{"start_unix", s.start_unix}, {"interval_s", s.interval_s}, {"count", s.count},
              {"histograms", json::array()}, {"values", json::array()}};
    for (const auto& h : s.histograms) {
        json buckets = json::array();
        for (const auto& interval : h.intervals) buckets.push_back(interval.buckets());
        j["histograms"].push_back({{"name", h.name}, {"labels", h.labels}, {"unit", h.unit},
                                   {"log2_buckets", buckets}, {"provenance", provenance_json(h.provenance)}});
    }
    for (const auto& v : s.values)
        j["values"].push_back({{"name", v.name}, {"labels", v.labels}, {"unit", v.unit},
                               {"values", v.intervals}, {"provenance", provenance_json(v.provenance)}});
    return j;
}

// `window` bounds how many intervals there can be: a count far beyond
// duration / interval would make every reader of the series loop for nothing.
Series series_from_json(const JsonAt& j, const Window& window) {
    Series s;
    s.start_unix = j.at("start_unix").number();
    s.interval_s = j.at("interval_s").non_negative();
    const JsonAt count = j.at("count");
    s.count = count.count();
    if (s.count > 0 && s.interval_s == 0) count.fail("intervals counted (" + std::to_string(s.count) + ") but interval_s is 0");
    if (s.count > 0) {
        const double most = window.duration_s / s.interval_s + 2;   // the last, shorter interval, and rounding
        if (static_cast<double>(s.count) > most)
            count.fail(std::to_string(s.count) + " intervals of " + format_number(s.interval_s) +
                       " s cannot fit in a window of " + format_number(window.duration_s) + " s");
    }
    OncePerSeries histograms, values;
    j.at("histograms").each([&](const JsonAt& h) {
        HistogramSeries hs{h.at("name").string(), labels_from(h), h.string_or("unit", ""), {},
                           provenance_from(h.at("provenance"))};
        histograms.check(h, hs.name, hs.labels);
        const JsonAt intervals = h.at("log2_buckets");
        intervals.each([&](const JsonAt& b) { hs.intervals.push_back(histogram_from(b)); });
        if (hs.intervals.size() != s.count)
            intervals.fail("expected series.count = " + std::to_string(s.count) + " intervals, got " +
                           std::to_string(hs.intervals.size()));
        s.histograms.push_back(std::move(hs));
    });
    j.at("values").each([&](const JsonAt& v) {
        ValueSeries vs{v.at("name").string(), labels_from(v), v.string_or("unit", ""), {},
                       provenance_from(v.at("provenance"))};
        values.check(v, vs.name, vs.labels);
        const JsonAt intervals = v.at("values");
        intervals.each([&](const JsonAt& x) { vs.intervals.push_back(recorded_value(x, vs.name, vs.unit)); });
        if (vs.intervals.size() != s.count)
            intervals.fail("expected series.count = " + std::to_string(s.count) + " intervals, got " +
                           std::to_string(vs.intervals.size()));
        s.values.push_back(std::move(vs));
    });
    return s;
}

// Whether a value or key of the JSON text sits inside more than `most` objects
// and arrays (what nlohmann's parse callback reports as its depth), found in
// one pass over the text. The parse then needs no callback: nlohmann's
// callback parser looks through the enclosing array for discarded values at
// the end of every object, which made parsing quadratic in a bundle's entries.
bool nested_deeper_than(const std::string& text, int most) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == ']' || c == '}') {
            depth -= depth > 0;
            continue;
        }
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == ':') continue;
        if (depth > most) return true;
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') ++depth;
    }
    return false;
}

}  // namespace

json evidence_to_json(const Evidence& ev) {
    json j;
    j["schema"] = "iodiag-bundle";
    j["schema_version"] = Evidence::kSchemaVersion;
    j["host"] = ev.host;
    j["kernel"] = ev.kernel;
    j["window"] = {{"start_unix", ev.window.start_unix}, {"duration_s", ev.window.duration_s}};
    j["collectors"] = json::array();
    for (const auto& c : ev.collectors)
        j["collectors"].push_back(
            {{"name", c.name}, {"available", c.available}, {"reason", c.reason}, {"layers", c.layers}});
    j["metrics"] = json::array();
    for (const auto& m : ev.metrics)
        j["metrics"].push_back({{"name", m.name}, {"labels", m.labels}, {"value", m.value},
                                {"unit", m.unit}, {"provenance", provenance_json(m.provenance)}});
    j["facts"] = json::array();
    for (const auto& f : ev.facts)
        j["facts"].push_back({{"name", f.name}, {"labels", f.labels}, {"value", f.value},
                              {"provenance", provenance_json(f.provenance)}});
    j["histograms"] = json::array();
    for (const auto& h : ev.histograms)
        j["histograms"].push_back({{"name", h.name}, {"labels", h.labels}, {"unit", h.unit},
                                   {"log2_buckets", h.hist.buckets()},
                                   {"provenance", provenance_json(h.provenance)}});
    j["exemplars"] = json::array();
    for (const auto& e : ev.exemplars)
        j["exemplars"].push_back({{"kind", e.kind}, {"labels", e.labels}, {"values", e.values},
                                  {"unit", e.unit}, {"provenance", provenance_json(e.provenance)}});
    j["series"] = series_to_json(ev.series);
    return j;
}

Evidence evidence_from_json(const json& doc) {
    try {
        const JsonAt j(doc, "");
        if (!doc.is_object() || doc.value("schema", json()) != "iodiag-bundle")
            throw BundleError("not an iodiag bundle (no \"schema\": \"iodiag-bundle\" at the top level)");
        Evidence ev;
        const JsonAt version = j.at("schema_version");
        ev.schema_version = version.integer();
        if (ev.schema_version < Evidence::kOldestReadableSchemaVersion || ev.schema_version > Evidence::kSchemaVersion)
            version.fail("bundle schema_version " + std::to_string(ev.schema_version) +
                         " is not supported (this build reads " +
                         std::to_string(Evidence::kOldestReadableSchemaVersion) + " to " +
                         std::to_string(Evidence::kSchemaVersion) + ")");
        ev.host = j.string_or("host", "");
        ev.kernel = j.string_or("kernel", "");
        const JsonAt window = j.at("window");
        ev.window.start_unix = window.at("start_unix").number();
        ev.window.duration_s = window.at("duration_s").non_negative();
        j.at("collectors").each([&](const JsonAt& c) {
            auto layers = c.find("layers");
            ev.collectors.push_back({c.at("name").string(), c.at("available").boolean(), c.string_or("reason", ""),
                                     layers ? layers->strings() : std::vector<std::string>{}});
        });
        OncePerSeries metrics, facts, histograms;
        j.at("metrics").each([&](const JsonAt& m) {
            const std::string name = m.at("name").string(), unit = m.string_or("unit", "");
            Labels labels = labels_from(m);
            metrics.check(m, name, labels);
            const double value = recorded_value(m.at("value"), name, unit);
            ev.metrics.push_back({name, std::move(labels), value, unit, provenance_from(m.at("provenance"))});
        });
        j.at("facts").each([&](const JsonAt& f) {
            ev.facts.push_back(
                {f.at("name").string(), labels_from(f), f.at("value").string(), provenance_from(f.at("provenance"))});
            facts.check(f, ev.facts.back().name, ev.facts.back().labels);
        });
        j.at("histograms").each([&](const JsonAt& h) {
            ev.histograms.push_back({h.at("name").string(), labels_from(h), h.string_or("unit", ""),
                                     histogram_from(h.at("log2_buckets")), provenance_from(h.at("provenance"))});
            histograms.check(h, ev.histograms.back().name, ev.histograms.back().labels);
        });
        j.at("exemplars").each([&](const JsonAt& e) {
            std::map<std::string, double> values;
            e.at("values").members([&](const std::string& key, const JsonAt& v) {
                values[key] = is_duration_key(key) ? v.non_negative() : v.number();
            });
            ev.exemplars.push_back({e.at("kind").string(), labels_from(e), std::move(values), e.string_or("unit", ""),
                                    provenance_from(e.at("provenance"))});
        });
        // Version 1 had no series: the bundle loads with none.
        if (ev.schema_version >= 2) ev.series = series_from_json(j.at("series"), ev.window);
        return ev;
    } catch (const JsonPathError& e) {
        throw BundleError(e.what());
    }
}

Evidence parse_bundle(const std::string& text) {
    if (text.size() > kMaxBundleBytes)
        throw BundleError(std::to_string(text.size() >> 20) + " MiB is more than a bundle may hold (" +
                          std::to_string(kMaxBundleBytes >> 20) + " MiB): not a bundle iodiag wrote");
    json doc;
    try {
        // Nothing iodiag writes nests deeper than a few levels: a deeper
        // document is refused before it is parsed, before it costs anything.
        if (nested_deeper_than(text, kMaxBundleDepth))
            throw BundleError("nested deeper than " + std::to_string(kMaxBundleDepth) +
                              " levels: not a bundle iodiag wrote");
        doc = json::parse(text);
    } catch (const json::exception& e) {
        // A syntax error, or a number too large for a double (1e999).
        // Keep nlohmann's position and reason, not its "[json.exception...]" tag.
        std::string what = e.what();
        if (auto tag = what.find("] "); what.rfind("[json.exception", 0) == 0 && tag != std::string::npos)
            what = what.substr(tag + 2);
        throw BundleError("not valid JSON: " + what);
    }
    return evidence_from_json(doc);
}

std::string bundle_text(const Evidence& ev) { return json_text(evidence_to_json(ev), 1) + "\n"; }

void save_bundle(const std::string& path, const Evidence& ev) { write_file_atomically(path, bundle_text(ev)); }

Evidence load_bundle(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BundleError(path + ": cannot open bundle: " + std::strerror(errno));
    // Refuse an oversized file before reading it into memory.
    in.seekg(0, std::ios::end);
    const auto size = in.tellg();
    if (size > 0 && static_cast<uint64_t>(size) > kMaxBundleBytes)
        throw BundleError(path + ": " + std::to_string(static_cast<uint64_t>(size) >> 20) +
                          " MiB is more than a bundle may hold (" + std::to_string(kMaxBundleBytes >> 20) +
                          " MiB): not a bundle iodiag wrote");
    in.seekg(0, std::ios::beg);
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw BundleError(path + ": read error");
    try {
        return parse_bundle(ss.str());
    } catch (const BundleError& e) {
        throw BundleError(path + ": " + e.what());
    }
}

}  // namespace iodiag
