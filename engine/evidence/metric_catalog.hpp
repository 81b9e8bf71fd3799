// What metrics and facts exist: declared by each collector (and by the engine
// for what it derives), so that the rule loader can reject unknown names and
// `iodiag rules list` can say what a rule may use.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace iodiag {

struct MetricSpec {
    enum class Kind { Metric, Fact, Histogram };
    std::string name;          // e.g. "disk.read_await_ms"
    Kind kind = Kind::Metric;
    std::string unit;          // empty for facts
    std::string layer;         // the layer it speaks about, e.g. "device"
    std::string instance_key;  // label that names the instance ("device", "cgroup"), or "" if global
    std::string description;
};

class MetricCatalog {
public:
    void add(const MetricSpec& spec) { specs_[spec.name] = spec; }
    void add_all(const std::vector<MetricSpec>& specs) {
        for (const auto& s : specs) add(s);
    }
    const MetricSpec* find(const std::string& name) const {
        auto it = specs_.find(name);
        return it == specs_.end() ? nullptr : &it->second;
    }
    const std::map<std::string, MetricSpec>& all() const { return specs_; }

private:
    std::map<std::string, MetricSpec> specs_;
};

}  // namespace iodiag
