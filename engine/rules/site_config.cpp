// The site configuration: reader and checker (every problem a Diagnostic with
// file:line:col, the checker keeps going), then the two places it acts: the
// loaded rule set and the evidence's device references.
#include "engine/rules/site_config.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "engine/evidence/format.hpp"
#include "engine/rules/yaml_reader.hpp"

namespace iodiag {

namespace {

using yamlr::Reporter;

const std::set<std::string> kTopKeys{"rules", "devices", "history"};
const std::set<std::string> kRuleKeys{"disable", "severity", "thresholds"};
const std::set<std::string> kDeviceKeys{"class", "read_latency_ms", "write_latency_ms"};
const std::set<std::string> kHistoryKeys{"state_dir", "nights", "keep", "max_bytes"};

std::string joined(const std::vector<std::string>& v, const std::string& sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

std::string where(const SourcePos& p) {
    return p.file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

// ---- threshold addresses ----

struct Address {
    std::string metric;
    std::optional<double> percentile;
    std::optional<std::string> ratio_of;
};

// "METRIC", "METRIC pNN", "METRIC / RATIO_OF", "METRIC pNN / RATIO_OF".
std::optional<Address> parse_address(const std::string& text) {
    static const std::regex re(R"(^\s*([A-Za-z_][A-Za-z0-9_.]*)(\s+p([0-9]+(\.[0-9]+)?))?\s*(/\s*([A-Za-z_][A-Za-z0-9_.]*)\s*)?$)");
    std::smatch m;
    if (!std::regex_match(text, m, re)) return std::nullopt;
    Address a;
    a.metric = m[1];
    if (m[3].matched) a.percentile = std::stod(m[3]);
    if (m[6].matched) a.ratio_of = m[6];
    return a;
}

std::string address_of(const Comparison& c) {
    std::string s = c.metric;
    if (c.percentile) s += " p" + format_number(*c.percentile);
    if (!c.ratio_of.empty()) s += " / " + c.ratio_of;
    return s;
}

bool matches(const Comparison& c, const Address& a) {
    if (c.metric.empty() || c.metric != a.metric) return false;
    if (a.percentile && (!c.percentile || *c.percentile != *a.percentile)) return false;
    if (a.ratio_of && c.ratio_of != *a.ratio_of) return false;
    return true;
}

template <typename F>
void for_each_leaf(Condition& c, const F& f) {
    if (c.kind == Condition::Kind::Leaf) {
        f(c.leaf);
        return;
    }
    for (auto& child : c.children) for_each_leaf(child, f);
}

template <typename F>
void for_each_leaf(const Condition& c, const F& f) {
    for_each_leaf(const_cast<Condition&>(c), [&](const Comparison& leaf) { f(leaf); });
}

bool same_pos(const SourcePos& a, const SourcePos& b) {
    return a.file == b.file && a.line == b.line && a.column == b.column;
}

// Distinct comparisons (by where they are written: a macro leaf used twice in
// one rule is one comparison) of the rule's condition that `a` addresses.
std::vector<SourcePos> addressed(const Rule& rule, const Address& a) {
    std::vector<SourcePos> out;
    for_each_leaf(rule.when, [&](const Comparison& leaf) {
        if (!matches(leaf, a)) return;
        if (std::none_of(out.begin(), out.end(), [&](const SourcePos& p) { return same_pos(p, leaf.pos); }))
            out.push_back(leaf.pos);
    });
    return out;
}

std::vector<std::string> numeric_addresses(const Rule& rule) {
    std::vector<std::string> out;
    for_each_leaf(rule.when, [&](const Comparison& leaf) {
        if (leaf.metric.empty()) return;
        const std::string a = address_of(leaf);
        if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    });
    return out;
}

bool compares_fact(const Rule& rule, const std::string& name) {
    bool found = false;
    for_each_leaf(rule.when, [&](const Comparison& leaf) { found |= leaf.fact == name; });
    return found;
}

// ---- values ----

std::optional<double> finite_number(const YAML::Node& n) {
    if (!n.IsScalar()) return std::nullopt;
    try {
        const double v = n.as<double>();
        if (std::isfinite(v)) return v;
    } catch (const YAML::Exception&) {
    }
    return std::nullopt;
}

std::optional<long long> integer(const YAML::Node& n) {
    if (!n.IsScalar()) return std::nullopt;
    try {
        return n.as<long long>();
    } catch (const YAML::Exception&) {
        return std::nullopt;
    }
}

std::optional<uint64_t> byte_size(const YAML::Node& n) {
    if (!n.IsScalar()) return std::nullopt;
    return parse_byte_size(n.Scalar());
}

bool valid_device_key(const std::string& k) {
    static const std::regex name(R"(^[A-Za-z0-9][A-Za-z0-9._:+-]*$)");
    return std::regex_match(k, name) || (k.rfind("/dev/", 0) == 0 && k.size() > 5);
}

// ---- the checker ----

class Checker {
public:
    Checker(const SiteConfigContext& ctx, SiteConfig& out, Reporter& rep) : ctx_(ctx), out_(out), rep_(rep) {}

    void top(const YAML::Node& root) {
        if (root.IsNull()) return;   // an empty file changes nothing
        if (!rep_.expect_map(root, "the site configuration", kTopKeys)) return;
        if (root["rules"]) rules(root["rules"]);
        if (root["devices"]) devices(root["devices"]);
        if (root["history"]) history(root["history"]);
    }

private:
    const Rule* find_rule(const std::string& id) const {
        if (!ctx_.rules) return nullptr;
        for (const auto& r : ctx_.rules->rules)
            if (r.id == id) return &r;
        return nullptr;
    }

    void rules(const YAML::Node& n) {
        if (!n.IsMap()) {
            rep_.error("E009", n, "'rules' must be a map of rule id: {disable, severity, thresholds}");
            return;
        }
        for (const auto& kv : n) {
            const std::string id = kv.first.Scalar();
            RuleOverride o;
            o.rule_id = id;
            o.pos = rep_.pos(kv.first);
            const Rule* rule = find_rule(id);
            if (!rule) {
                std::vector<std::string> ids;
                if (ctx_.rules)
                    for (const auto& r : ctx_.rules->rules) ids.push_back(r.id);
                rep_.error("C001", kv.first,
                           "unknown rule id '" + id + "'" + yamlr::did_you_mean(id, ids) + " (iodiag rules list)");
            }
            if (!rep_.expect_map(kv.second, "the settings of rule '" + id + "'", kRuleKeys)) continue;
            const YAML::Node body = kv.second;
            if (const YAML::Node d = body["disable"]) {
                bool flag = false;
                if (!d.IsScalar() || !YAML::convert<bool>::decode(d, flag))
                    rep_.error("E009", d, "'disable' must be true or false, found '" + (d.IsScalar() ? d.Scalar() : "?") + "'");
                o.disable = flag;
            }
            if (auto sev = rep_.scalar(body, "severity")) {
                static const std::map<std::string, Severity> severities{
                    {"info", Severity::Info}, {"warning", Severity::Warning}, {"critical", Severity::Critical}};
                if (auto it = severities.find(*sev); it != severities.end())
                    o.severity = it->second;
                else
                    rep_.error("E006", body["severity"], "severity must be info, warning or critical, not '" + *sev + "'");
            }
            if (const YAML::Node t = body["thresholds"]) thresholds(t, rule, o);
            out_.rules.push_back(std::move(o));
        }
    }

    void thresholds(const YAML::Node& t, const Rule* rule, RuleOverride& o) {
        if (!t.IsMap()) {
            rep_.error("E009", t, "'thresholds' must be a map of metric: value");
            return;
        }
        for (const auto& kv : t) {
            ThresholdOverride th;
            th.address = kv.first.Scalar();
            th.pos = rep_.pos(kv.first);
            const auto value = finite_number(kv.second);
            if (!value) {
                rep_.error(kv.second.IsScalar() ? "C004" : "E009", kv.second,
                           "the threshold of '" + th.address + "' must be a finite number, found '" +
                               (kv.second.IsScalar() ? kv.second.Scalar() : std::string("a list or map")) + "'");
            } else {
                th.value = *value;
            }
            if (!rule) continue;   // unknown rule: reported above
            const auto addr = parse_address(th.address);
            if (!addr) {
                rep_.error("C002", kv.first,
                           "'" + th.address + "' is not a threshold address: write METRIC, METRIC pNN or "
                           "METRIC / RATIO_OF (the rule compares: " + joined(numeric_addresses(*rule)) + ")");
                continue;
            }
            th.matches = addressed(*rule, *addr);
            if (th.matches.empty()) {
                const std::string why = compares_fact(*rule, addr->metric)
                                            ? "'" + addr->metric + "' is a fact the rule compares as text, not a number"
                                            : "rule '" + rule->id + "' has no comparison of '" + th.address + "'";
                rep_.error("C002", kv.first, why + " (it compares: " + joined(numeric_addresses(*rule)) + ")");
                continue;
            }
            if (th.matches.size() > 1) {
                std::vector<std::string> at;
                for_each_leaf(rule->when, [&](const Comparison& leaf) {
                    if (!matches(leaf, *addr)) return;
                    const std::string s = "'" + address_of(leaf) + "' at " + where(leaf.pos);
                    if (std::find(at.begin(), at.end(), s) == at.end()) at.push_back(s);
                });
                rep_.error("C003", kv.first,
                           "'" + th.address + "' is ambiguous in rule '" + rule->id + "': it matches " + joined(at) +
                               "; qualify it with the percentile (pNN) or the ratio (/ METRIC)");
                continue;
            }
            if (value) check_range(*addr, *value, kv.second);
            o.thresholds.push_back(std::move(th));
        }
    }

    void check_range(const Address& a, double v, const YAML::Node& at) {
        if (a.ratio_of) return;   // a ratio may be anything finite
        std::string unit;
        if (ctx_.catalog)
            if (const MetricSpec* s = ctx_.catalog->find(a.metric)) unit = s->unit;
        if (unit == "pct" && (v < -100 || v > 100))
            rep_.error("C004", at, "'" + a.metric + "' is a percentage: the threshold must lie in -100..100, not " +
                                       format_number(v));
        static const std::set<std::string> non_negative{"us", "ms", "s", "ns", "count", "bytes", "requests", "pages", "1/s"};
        if ((a.percentile || non_negative.count(unit)) && v < 0)
            rep_.error("C004", at, "'" + a.metric + "' (" + (unit.empty() ? "a percentile" : unit) +
                                       ") cannot be negative: threshold " + format_number(v));
    }

    void devices(const YAML::Node& n) {
        if (!n.IsMap()) {
            rep_.error("E009", n, "'devices' must be a map of device: {class, read_latency_ms, write_latency_ms}");
            return;
        }
        for (const auto& kv : n) {
            DeviceConfig d;
            d.key = kv.first.Scalar();
            d.pos = rep_.pos(kv.first);
            if (!valid_device_key(d.key))
                rep_.error("C006", kv.first,
                           "'" + d.key + "' is not a device: use the kernel name (nvme0n1, vdb, dm-0) or a /dev path");
            if (!rep_.expect_map(kv.second, "the settings of device '" + d.key + "'", kDeviceKeys)) continue;
            const YAML::Node body = kv.second;
            if (auto cls = rep_.scalar(body, "class")) {
                d.class_pos = rep_.pos(body["class"]);
                if (std::find(ctx_.device_classes.begin(), ctx_.device_classes.end(), *cls) ==
                    ctx_.device_classes.end())
                    rep_.error("C005", body["class"],
                               "unknown device class '" + *cls + "' (classes with a reference latency: " +
                                   joined(ctx_.device_classes) + "; or give read_latency_ms / write_latency_ms)");
                else
                    d.device_class = *cls;
            }
            for (auto [key, target, pos] : {std::tuple{"read_latency_ms", &d.read_latency_ms, &d.read_pos},
                                            std::tuple{"write_latency_ms", &d.write_latency_ms, &d.write_pos}}) {
                const YAML::Node v = body[key];
                if (!v) continue;
                *pos = rep_.pos(v);
                const auto ms = finite_number(v);
                if (!ms)
                    rep_.error(v.IsScalar() ? "C004" : "E009", v,
                               std::string("'") + key + "' must be a number of milliseconds");
                else if (*ms <= 0)
                    rep_.error("C004", v, std::string("'") + key + "' must be above 0 ms, not " + format_number(*ms));
                else
                    *target = *ms;
            }
            out_.devices.push_back(std::move(d));
        }
    }

    void history(const YAML::Node& n) {
        if (!rep_.expect_map(n, "'history'", kHistoryKeys)) return;
        if (auto dir = rep_.scalar(n, "state_dir")) {
            if (dir->empty() || (*dir)[0] != '/')
                rep_.error("C004", n["state_dir"], "'state_dir' must be an absolute path, not '" + *dir + "'");
            else
                out_.history.state_dir = *dir;
        }
        for (auto [key, target] : {std::pair{"nights", &out_.history.nights}, std::pair{"keep", &out_.history.keep}}) {
            const YAML::Node v = n[key];
            if (!v) continue;
            const auto i = integer(v);
            if (!i)
                rep_.error("E009", v, std::string("'") + key + "' must be a whole number");
            else if (*i < 1)
                rep_.error("C004", v, std::string("'") + key + "' must be at least 1, not " + std::to_string(*i));
            else
                *target = static_cast<size_t>(*i);
        }
        if (const YAML::Node v = n["max_bytes"]) {
            const auto b = byte_size(v);
            if (!b)
                rep_.error("E009", v, "'max_bytes' must be a size in bytes (134217728, 128MiB, 500MB)");
            else if (*b == 0)
                rep_.error("C004", v, "'max_bytes' must be above 0");
            else
                out_.history.max_bytes = *b;
        }
    }

    const SiteConfigContext& ctx_;
    SiteConfig& out_;
    Reporter& rep_;
};

SiteConfig check(const std::optional<yamlr::Document>& doc, const std::string& file, const SiteConfigContext& ctx,
                 std::vector<Diagnostic> diags) {
    SiteConfig config;
    config.file = file;
    if (doc) {
        Reporter rep(file, diags);
        Checker checker(ctx, config, rep);
        try {
            checker.top(doc->root);
        } catch (const YAML::Exception& e) {
            diags.push_back({"E009", true, {file, e.mark.line + 1, e.mark.column + 1},
                             std::string("unexpected YAML structure: ") + e.what()});
        }
    }
    yamlr::deduplicate(diags);
    std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
        return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
    });
    config.diagnostics = std::move(diags);
    return config;
}

std::string note_for(const SiteConfig& config, const RuleOverride& o, const Rule& rule,
                     const std::vector<std::string>& was) {
    std::vector<std::string> changes;
    if (o.severity) changes.push_back("severity " + to_string(*o.severity) + " (was " + to_string(rule.severity) + ")");
    for (size_t i = 0; i < o.thresholds.size(); ++i)
        changes.push_back("threshold of " + o.thresholds[i].address + " " + format_number(o.thresholds[i].value) +
                          " (was " + was[i] + ")");
    return "site configuration " + config.file + ":" + std::to_string(o.pos.line) + ": " + joined(changes, "; ");
}

}  // namespace

std::optional<uint64_t> parse_byte_size(const std::string& s) {
    static const std::regex re(R"(^\s*([0-9]+)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*$)");
    std::smatch m;
    if (!std::regex_match(s, m, re)) return std::nullopt;
    const std::map<std::string, uint64_t> unit{{"", 1},          {"B", 1},           {"KB", 1000ull},
                                               {"MB", 1000000ull}, {"GB", 1000000000ull}, {"TB", 1000000000000ull},
                                               {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
                                               {"TiB", 1ull << 40}};
    try {
        return std::stoull(m[1]) * unit.at(m[2]);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

bool SiteConfig::ok() const {
    return std::none_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) { return d.error; });
}

SiteConfig load_site_config(const std::string& file, const SiteConfigContext& ctx) {
    std::vector<Diagnostic> diags;
    auto doc = yamlr::read_document(file, diags);
    return check(doc, file, ctx, std::move(diags));
}

SiteConfig parse_site_config(const std::string& yaml, const std::string& file, const SiteConfigContext& ctx) {
    std::vector<Diagnostic> diags;
    auto doc = yamlr::parse_document(yaml, file, diags);
    return check(doc, file, ctx, std::move(diags));
}

std::vector<std::string> apply_rule_overrides(const SiteConfig& config, RuleSet& rules) {
    std::vector<std::string> lines;
    for (const auto& o : config.rules) {
        auto it = std::find_if(rules.rules.begin(), rules.rules.end(), [&](const Rule& r) { return r.id == o.rule_id; });
        if (it == rules.rules.end()) continue;
        if (o.disable) {
            lines.push_back(o.rule_id + ": disabled (" + config.file + ":" + std::to_string(o.pos.line) + ")");
            rules.rules.erase(it);
            continue;
        }
        Rule& rule = *it;
        std::vector<std::string> was;
        for (const auto& th : o.thresholds) {
            const auto addr = parse_address(th.address);
            if (!addr) continue;
            std::string before;
            for_each_leaf(rule.when, [&](Comparison& leaf) {
                if (!matches(leaf, *addr)) return;
                before = format_number(leaf.value);
                leaf.value = th.value;
            });
            // "Verify after the fix" checks the threshold in force.
            for (auto& v : rule.verify)
                if (matches(v, *addr)) v.value = th.value;
            was.push_back(before);
        }
        if (!o.severity && o.thresholds.empty()) continue;
        const std::string note = note_for(config, o, rule, was);
        if (o.severity) rule.severity = *o.severity;
        rule.mechanism += " (Changed by the " + note + ".)";
        lines.push_back(o.rule_id + ": " + note);
    }
    return lines;
}

std::vector<std::string> apply_device_config(const SiteConfig& config, Evidence& ev, const DeviceResolver& resolve) {
    std::vector<std::string> lines;
    const auto present = ev.instances("device");
    auto source = [&](const SourcePos& p) { return config.file + ":" + std::to_string(p.line); };
    for (const auto& d : config.devices) {
        const std::string name = resolve ? resolve(d.key) : d.key;
        if (name.empty() || std::find(present.begin(), present.end(), name) == present.end()) {
            lines.push_back(d.key + ": not a block device of this host (" + source(d.pos) + ")");
            continue;
        }
        const Labels labels{{"device", name}};
        std::vector<std::string> parts;
        if (d.device_class) {
            auto fact = std::find_if(ev.facts.begin(), ev.facts.end(),
                                     [&](const Fact& f) { return f.name == "device.class" && f.labels == labels; });
            // What the collector saw, also when the configuration was applied
            // before (a bundle recorded with it).
            std::string detected;
            if (fact != ev.facts.end() && fact->provenance.kind != "config") {
                detected = fact->value;
            } else if (fact != ev.facts.end()) {
                const std::string& src = fact->provenance.source;
                if (auto at = src.find(" (detected: "); at != std::string::npos)
                    detected = src.substr(at + 12, src.size() - at - 13);
            }
            const Provenance p{"config", source(d.class_pos) + (detected.empty() ? "" : " (detected: " + detected + ")")};
            if (fact != ev.facts.end()) {
                fact->value = *d.device_class;
                fact->provenance = p;
            } else {
                ev.add_fact("device.class", labels, *d.device_class, p);
            }
            parts.push_back("class " + *d.device_class + (detected.empty() ? "" : " (detected " + detected + ")"));
        }
        for (auto [metric, value, pos, word] :
             {std::tuple{"device.nominal_read_latency_ms", d.read_latency_ms, d.read_pos, "read"},
              std::tuple{"device.nominal_write_latency_ms", d.write_latency_ms, d.write_pos, "write"}}) {
            if (!value) continue;
            const std::string name_of_metric = metric;   // clang < 16 cannot capture a structured binding
            std::erase_if(ev.metrics,
                          [&](const Metric& m) { return m.name == name_of_metric && m.labels == labels; });
            ev.add_metric(metric, labels, *value, "ms", {"config", source(pos)});
            parts.push_back(std::string("reference ") + word + " " + format_value(*value, "ms"));
        }
        lines.push_back(name + (name == d.key ? "" : " (" + d.key + ")") + ": " + joined(parts) + " (" + source(d.pos) +
                        ")");
    }
    return lines;
}

}  // namespace iodiag
