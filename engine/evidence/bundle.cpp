#include "engine/evidence/bundle.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace iodiag {

using nlohmann::json;

namespace {

json provenance_json(const Provenance& p) { return {{"kind", p.kind}, {"source", p.source}}; }

Provenance provenance_from(const json& j) {
    return {j.at("kind").get<std::string>(), j.at("source").get<std::string>()};
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

Series series_from_json(const json& j) {
    Series s;
    s.start_unix = j.at("start_unix").get<double>();
    s.interval_s = j.at("interval_s").get<double>();
    s.count = j.at("count").get<size_t>();
    for (const auto& h : j.at("histograms")) {
        HistogramSeries hs{h.at("name").get<std::string>(), h.value("labels", Labels{}), h.value("unit", ""), {},
                           provenance_from(h.at("provenance"))};
        for (const auto& b : h.at("log2_buckets")) {
            hs.intervals.emplace_back();
            hs.intervals.back().set_buckets(b.get<std::vector<uint64_t>>());
        }
        if (hs.intervals.size() != s.count)
            throw std::runtime_error("series histogram " + hs.name + " has " + std::to_string(hs.intervals.size()) +
                                     " intervals, series.count is " + std::to_string(s.count));
        s.histograms.push_back(std::move(hs));
    }
    for (const auto& v : j.at("values")) {
        ValueSeries vs{v.at("name").get<std::string>(), v.value("labels", Labels{}), v.value("unit", ""),
                       v.at("values").get<std::vector<double>>(), provenance_from(v.at("provenance"))};
        if (vs.intervals.size() != s.count)
            throw std::runtime_error("series values " + vs.name + " has " + std::to_string(vs.intervals.size()) +
                                     " intervals, series.count is " + std::to_string(s.count));
        s.values.push_back(std::move(vs));
    }
    return s;
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

Evidence evidence_from_json(const json& j) {
    try {
        if (j.value("schema", "") != "iodiag-bundle")
            throw std::runtime_error("not an iodiag bundle (missing \"schema\": \"iodiag-bundle\")");
        Evidence ev;
        ev.schema_version = j.at("schema_version").get<int>();
        if (ev.schema_version < Evidence::kOldestReadableSchemaVersion ||
            ev.schema_version > Evidence::kSchemaVersion)
            throw std::runtime_error("bundle schema_version " + std::to_string(ev.schema_version) +
                                     " is not supported (this build reads " +
                                     std::to_string(Evidence::kOldestReadableSchemaVersion) + " to " +
                                     std::to_string(Evidence::kSchemaVersion) + ")");
        ev.host = j.value("host", "");
        ev.kernel = j.value("kernel", "");
        ev.window.start_unix = j.at("window").at("start_unix").get<double>();
        ev.window.duration_s = j.at("window").at("duration_s").get<double>();
        for (const auto& c : j.at("collectors"))
            ev.collectors.push_back({c.at("name").get<std::string>(), c.at("available").get<bool>(),
                                     c.value("reason", ""),
                                     c.value("layers", std::vector<std::string>{})});
        for (const auto& m : j.at("metrics"))
            ev.metrics.push_back({m.at("name").get<std::string>(), m.value("labels", Labels{}),
                                  m.at("value").get<double>(), m.value("unit", ""),
                                  provenance_from(m.at("provenance"))});
        for (const auto& f : j.at("facts"))
            ev.facts.push_back({f.at("name").get<std::string>(), f.value("labels", Labels{}),
                                f.at("value").get<std::string>(), provenance_from(f.at("provenance"))});
        for (const auto& h : j.at("histograms")) {
            HistogramMetric hm{h.at("name").get<std::string>(), h.value("labels", Labels{}),
                               h.value("unit", ""), {}, provenance_from(h.at("provenance"))};
            hm.hist.set_buckets(h.at("log2_buckets").get<std::vector<uint64_t>>());
            ev.histograms.push_back(std::move(hm));
        }
        for (const auto& e : j.at("exemplars"))
            ev.exemplars.push_back({e.at("kind").get<std::string>(), e.value("labels", Labels{}),
                                    e.at("values").get<std::map<std::string, double>>(),
                                    e.value("unit", ""), provenance_from(e.at("provenance"))});
        // Version 1 had no series: the bundle loads with none.
        if (ev.schema_version >= 2) ev.series = series_from_json(j.at("series"));
        return ev;
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("malformed bundle: ") + e.what());
    }
}

void write_file_atomically(const std::string& path, const std::string& content) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error("cannot write " + tmp);
        out << content;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw std::runtime_error("short write to " + tmp);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot rename " + tmp + " to " + path);
    }
}

void save_bundle(const std::string& path, const Evidence& ev) {
    write_file_atomically(path, evidence_to_json(ev).dump(1) + "\n");
}

Evidence load_bundle(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open bundle");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return evidence_from_json(json::parse(ss.str()));
    } catch (const json::exception& e) {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

}  // namespace iodiag
