#include "engine/render/plugin_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/evidence/layers.hpp"
#include "engine/render/cgroup_shown.hpp"

namespace iodiag {

namespace {

// Plain decimal notation (plugin runners do not all read exponents), six
// significant digits, no trailing zeros.
std::string perf_number(double v) {
    if (!std::isfinite(v)) return "U";
    if (v == 0) return "0";
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
    const int decimals = std::clamp(5 - magnitude, 0, 12);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s = buf;
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}

std::string opt_number(const std::optional<double>& v) { return v ? perf_number(*v) : ""; }

// Labels and the summary must not break the line's grammar: no quotes or '='
// in a label, no '|' or line break in the text.
std::string clean_label(std::string s) {
    for (char& c : s)
        if (c == '\'' || c == '=' || c == ' ' || c == '|') c = '_';
    return s;
}

std::string one_line(std::string s) {
    for (char& c : s) {
        if (c == '|') c = '/';
        if (c == '\n' || c == '\r') c = ' ';
    }
    return s;
}

// The status line is what a pager shows: a cgroup by its name alone (the
// long output and the verdict keep the path as evidence).
std::string without_cgroup_paths(std::string text, const Verdict& v) {
    for (const auto& [label, n] : v.cgroup_names) {
        const std::string full = name_with_path(n.name, label);
        if (full == label) continue;
        for (size_t at = text.find(full); at != std::string::npos; at = text.find(full, at + n.name.size()))
            text.replace(at, full.size(), n.name);
    }
    return text;
}

// "; who: postgres pid 4242 in postgresql@15-main.service": who suffered,
// one process, its cgroup by name; "(given by --victim)" when the operator
// named it (a nightly check of one service).
std::string who_clause(const Verdict& v) {
    std::string app, pid, cgroup, given;
    for (const auto& w : v.who_suffered) {
        if (w.what == "app") app = w.value;
        if (w.what == "pid") pid = w.value;
        if (w.what == "cgroup") cgroup = name_only(v, w.value);
        if (w.what == "given") given = w.value;
    }
    if (app.empty()) return "";
    return "; who: " + app + (pid.empty() ? "" : " pid " + pid) + (cgroup.empty() ? "" : " in " + cgroup) +
           (given.empty() ? "" : " (--victim " + given + ")");
}

const Finding* headline_finding(const Verdict& v) {
    // The best-ranked finding among those of the worst severity: the one the
    // state is about.
    for (const auto& f : v.findings)
        if (f.severity == v.status) return &f;
    return v.findings.empty() ? nullptr : &v.findings.front();
}

size_t observed_layers(const Verdict& v) {
    return static_cast<size_t>(std::count_if(v.layers.begin(), v.layers.end(),
                                             [](const LayerRow& r) { return r.state != LayerState::NotObserved; }));
}

std::string unobserved_reason(const Verdict& v) {
    std::string why;
    for (const auto& c : v.collectors)
        if (!c.available && !c.layers.empty()) why += (why.empty() ? "" : "; ") + c.name + ": " + c.reason;
    return why.empty() ? "no collector measured any layer's latency" : why;
}

std::optional<double> metric(const Evidence& ev, const std::string& name, const Labels& l) {
    const Metric* m = ev.find_metric(name, l);
    return m ? std::optional<double>(m->value) : std::nullopt;
}

// Devices with requests completed and a measured D2C p99, busiest first.
std::vector<std::string> perf_devices(const Evidence& ev) {
    std::vector<std::pair<double, std::string>> busy;
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const auto requests = metric(ev, "block.requests", l);
        if (requests && *requests > 0 && ev.find_metric("block.d2c_p99_us", l)) busy.push_back({*requests, d});
    }
    std::sort(busy.begin(), busy.end(),
              [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<std::string> out;
    for (size_t i = 0; i < busy.size() && i < kMaxPerfDevices; ++i) out.push_back(busy[i].second);
    return out;
}

}  // namespace

std::string to_string(PluginState s) {
    switch (s) {
        case PluginState::Ok: return "OK";
        case PluginState::Warning: return "WARNING";
        case PluginState::Critical: return "CRITICAL";
        case PluginState::Unknown: return "UNKNOWN";
    }
    return "UNKNOWN";
}

std::string PerfDatum::to_string() const {
    std::vector<std::string> fields{value ? perf_number(*value) + uom : "U", opt_number(warn), opt_number(crit),
                                    opt_number(min), opt_number(max)};
    while (fields.size() > 1 && fields.back().empty()) fields.pop_back();
    std::string s = "'" + clean_label(label) + "'=" + fields[0];
    for (size_t i = 1; i < fields.size(); ++i) s += ";" + fields[i];
    return s;
}

std::string PluginResult::status_line() const {
    std::string line = "IODIAG " + iodiag::to_string(state) + " - " + one_line(summary);
    if (!perfdata.empty()) {
        line += " |";
        for (const auto& p : perfdata) line += " " + p.to_string();
    }
    return line;
}

PluginState plugin_state(const Verdict& v) {
    if (observed_layers(v) == 0) return PluginState::Unknown;
    if (v.findings.empty()) return v.blind.empty() ? PluginState::Ok : PluginState::Unknown;
    switch (v.status) {
        case Severity::Critical: return PluginState::Critical;
        case Severity::Warning: return PluginState::Warning;
        case Severity::Info: return PluginState::Ok;
    }
    return PluginState::Unknown;
}

PluginResult plugin_result(const Verdict& v) {
    PluginResult r;
    r.state = plugin_state(v);
    const size_t observed = observed_layers(v);
    const std::string coverage =
        "latency observed in " + std::to_string(observed) + " of " + std::to_string(v.layers.size()) + " layers";
    if (r.state == PluginState::Unknown) {
        r.summary = observed_layers(v) == 0 ? "nothing could be observed (" + unobserved_reason(v) + ")" : v.blind;
    } else if (const Finding* f = headline_finding(v)) {
        r.summary = without_cgroup_paths(f->title, v);
        if (v.findings.size() > 1) r.summary += " (+" + std::to_string(v.findings.size() - 1) + " more)";
        r.summary += who_clause(v);
    } else {
        r.summary = "no findings; " + coverage;
        // A check of one service says whom it judged, found or not.
        for (const auto& w : v.who_suffered)
            if (w.what == "given") r.summary += "; judged for --victim " + w.value;
    }

    r.perfdata.push_back({"status", static_cast<double>(static_cast<int>(r.state)), "", 1, 2, 0, 3});
    r.perfdata.push_back({"findings", static_cast<double>(v.findings.size()), "", {}, {}, 0, {}});
    r.perfdata.push_back({"coverage", 100.0 * v.coverage, "%", {}, {}, 0, 100});
    r.perfdata.push_back({"window", v.window.duration_s, "s", {}, {}, 0, {}});
    for (const auto& row : v.layers)
        if (row.share_slow_pct) r.perfdata.push_back({"share_" + row.layer, *row.share_slow_pct, "%", {}, {}, 0, 100});

    // The reference latency is derived (class table, site configuration, a loop
    // device's backing disk): the analysis did, and kept what it judged on.
    if (!v.judged_on) return r;
    const Evidence& ev = *v.judged_on;
    for (const auto& d : perf_devices(ev)) {
        const Labels l{{"device", d}};
        // The warning mark: 10x the reference latency (seed 000 §9.4), else, for
        // a device with no reference but a history, 3x its own median D2C p99
        // (rules/history.yaml's drift level).
        std::optional<double> warn;
        if (auto nominal_ms = metric(ev, "device.nominal_read_latency_ms", l))
            warn = 10 * *nominal_ms / 1000.0;
        else if (auto median_us = metric(ev, "history.d2c_p99_median_us", l))
            warn = 3 * *median_us / 1e6;
        const auto us_to_s = [](std::optional<double> us) {
            return us ? std::optional<double>(*us / 1e6) : std::nullopt;
        };
        r.perfdata.push_back({d + "_d2c_p99", us_to_s(metric(ev, "block.d2c_p99_us", l)), "s", warn, {}, 0, {}});
        r.perfdata.push_back({d + "_q2c_p99", us_to_s(metric(ev, "block.q2c_p99_us", l)), "s", {}, {}, 0, {}});
    }
    for (const auto& d : ev.instances("device"))
        if (auto used = metric(ev, "nvme.percent_used", {{"device", d}}))
            r.perfdata.push_back({d + "_percent_used", *used, "%", 90, {}, 0, {}});
    return r;
}

std::string plugin_long_output(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '|')
            out += "\u00a6";
        else
            out += c;
    }
    return out;
}

nlohmann::json plugin_json(const PluginResult& r) {
    using nlohmann::json;
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    json perf = json::array();
    for (const auto& p : r.perfdata)
        perf.push_back({{"label", clean_label(p.label)},
                        {"value", opt(p.value)},
                        {"uom", p.uom},
                        {"warn", opt(p.warn)},
                        {"crit", opt(p.crit)},
                        {"min", opt(p.min)},
                        {"max", opt(p.max)}});
    return {{"state", to_string(r.state)},
            {"exit_code", static_cast<int>(r.state)},
            {"status_line", r.status_line()},
            {"summary", one_line(r.summary)},
            {"perfdata", perf}};
}

}  // namespace iodiag
