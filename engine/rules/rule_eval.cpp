// The rule evaluator: three-valued logic over Evidence, per instance of the
// rule's for_each label, citing the values that decided each outcome.
//
// A missing metric makes its leaf Unknown, never False: a layer nobody measured
// is not healthy. all() is False if any child is False, else Unknown if any is
// Unknown, else True; any() is the dual; not() flips True/False, keeps Unknown.
#include <algorithm>
#include <map>

#include "engine/evidence/cgroup_labels.hpp"
#include "engine/evidence/format.hpp"
#include "engine/rules/rule_text.hpp"
#include "engine/rules/rules.hpp"

namespace iodiag {

namespace {

bool holds(double lhs, CmpOp op, double rhs) {
    switch (op) {
        case CmpOp::Gt: return lhs > rhs;
        case CmpOp::Ge: return lhs >= rhs;
        case CmpOp::Lt: return lhs < rhs;
        case CmpOp::Le: return lhs <= rhs;
        case CmpOp::Eq: return lhs == rhs;
        case CmpOp::Ne: return lhs != rhs;
    }
    return false;
}

Tri tri(bool b) { return b ? Tri::True : Tri::False; }

std::string labels_text(const Labels& l) {
    std::string s;
    for (const auto& [k, v] : l) s += (s.empty() ? "" : ",") + k + "=" + v;
    return s;
}

std::string percentile_name(double p) { return "p" + format_number(p); }

// Looks names up for one (rule, instance).
class Scope {
public:
    Scope(const Rule& rule, const Evidence& ev, const std::string& instance)
        : rule_(rule), ev_(ev), instance_(instance) {
        if (!rule_.for_each.empty()) per_instance_ = {{rule_.for_each, instance_}};
    }

    const std::string& instance() const { return instance_; }
    const Evidence& evidence() const { return ev_; }

    // The label key a name is looked up by for this instance (nullptr: none,
    // in a global rule or for a name the rule's catalog marks global), and
    // whether a miss there is looked up again without labels (a name the
    // catalog does not know: per instance first, then global).
    const std::string* instance_key(const std::string& name, bool& then_global) const {
        then_global = false;
        if (rule_.for_each.empty()) return nullptr;
        auto it = rule_.instance_keys.find(name);
        if (it != rule_.instance_keys.end()) return it->second.empty() ? nullptr : &it->second;
        then_global = true;
        return &rule_.for_each;
    }
    // Looked up in instance_key()'s order, without building a label set for
    // the common per-instance lookup (the rules look names up thousands of
    // times).
    template <typename T, typename Find>
    const T* find(const std::string& name, Find f) const {
        static const Labels kGlobal;
        bool then_global = false;
        const std::string* key = instance_key(name, then_global);
        if (!key) return f(name, kGlobal);
        const T* x = *key == rule_.for_each ? f(name, per_instance_) : f(name, Labels{{*key, instance_}});
        return x || !then_global ? x : f(name, kGlobal);
    }
    const Metric* metric(const std::string& n) const {
        return find<Metric>(n, [&](const std::string& a, const Labels& l) { return ev_.find_metric(a, l); });
    }
    const Fact* fact(const std::string& n) const {
        return find<Fact>(n, [&](const std::string& a, const Labels& l) { return ev_.find_fact(a, l); });
    }
    const HistogramMetric* histogram(const std::string& n) const {
        return find<HistogramMetric>(
            n, [&](const std::string& a, const Labels& l) { return ev_.find_histogram(a, l); });
    }
    std::string missing(const std::string& name) const {
        bool then_global = false;
        const std::string* key = instance_key(name, then_global);
        return key ? name + " (" + labels_text(Labels{{*key, instance_}}) + ")" : name;
    }

private:
    const Rule& rule_;
    const Evidence& ev_;
    std::string instance_;
    Labels per_instance_;   // {for_each: instance}
};

// A fact's text as a finding shows it: a cgroup by the name people use for
// it, the path as evidence (docs/cgroup-names.md).
std::string fact_shown(const Fact& f, const Scope& s) {
    return fact_names_a_cgroup(f.name) ? cgroup_shown(s.evidence(), f.value) : f.value;
}

// The left-hand side of a metric comparison, resolved.
struct Resolved {
    double lhs = 0;        // the compared value (after ratio_of)
    CitedValue cited;      // what the finding shows
    std::string now;       // the compared value, formatted, for verify lines
};

std::optional<Resolved> resolve_metric(const Comparison& c, const Scope& s, std::vector<std::string>& missing) {
    Resolved r;
    if (c.percentile) {
        const HistogramMetric* h = s.histogram(c.metric);
        if (!h) {
            missing.push_back(s.missing(c.metric));
            return std::nullopt;
        }
        if (h->hist.empty()) {
            missing.push_back(s.missing(c.metric) + " has no samples");
            return std::nullopt;
        }
        const PercentileEstimate est = h->hist.percentile(*c.percentile);
        r.lhs = est.value;
        r.cited = {c.metric + " " + percentile_name(*c.percentile), h->labels, est.value, h->unit, "",
                   h->provenance, "", format_value(est.value, h->unit)};
        r.cited.comparison = "(in bucket " + format_number(est.lo) + ".." + format_value(est.hi, h->unit) + ")";
    } else {
        const Metric* m = s.metric(c.metric);
        if (!m) {
            missing.push_back(s.missing(c.metric));
            return std::nullopt;
        }
        r.lhs = m->value;
        r.cited = {m->name, m->labels, m->value, m->unit, "", m->provenance, "", format_value(m->value, m->unit)};
    }
    const std::string unit = r.cited.unit;
    if (c.ratio_of.empty()) {
        const std::string bucket = r.cited.comparison.empty() ? "" : " " + r.cited.comparison;
        r.cited.comparison = to_string(c.op) + " " + format_value(c.value, unit) + bucket;
        r.now = format_value(r.lhs, unit);
        return r;
    }
    const Metric* d = s.metric(c.ratio_of);
    if (!d) {
        missing.push_back(s.missing(c.ratio_of));
        return std::nullopt;
    }
    if (d->value == 0) {
        missing.push_back(s.missing(c.ratio_of) + " is 0 (ratio undefined)");
        return std::nullopt;
    }
    r.lhs /= d->value;
    r.cited.comparison = to_string(c.op) + " " + format_number(c.value) + " x " + c.ratio_of + " (= " +
                         format_value(d->value, d->unit) + "); measured " + format_number(r.lhs) + " x";
    r.cited.provenance.source += "; " + c.ratio_of + " from " + d->provenance.kind + " " + d->provenance.source;
    r.now = format_number(r.lhs) + " x";
    return r;
}

struct LeafResult {
    Tri result = Tri::Unknown;
    std::optional<CitedValue> cited;
    std::string now;   // the value now, for verify lines
};

LeafResult eval_leaf(const Comparison& c, const Scope& s, std::vector<std::string>& missing) {
    LeafResult out;
    if (!c.fact.empty()) {
        const Fact* f = s.fact(c.fact);
        if (!f) {
            missing.push_back(s.missing(c.fact));
            return out;
        }
        std::string cmp;
        if (!c.one_of.empty()) {
            out.result = tri(std::find(c.one_of.begin(), c.one_of.end(), f->value) != c.one_of.end());
            std::string list;
            for (const auto& v : c.one_of) list += (list.empty() ? "" : ", ") + v;
            cmp = "in [" + list + "]";
        } else {
            out.result = tri((f->value == c.text) == (c.op == CmpOp::Eq));
            cmp = to_string(c.op) + " " + c.text;
        }
        out.cited = CitedValue{f->name, f->labels, 0, "", cmp, f->provenance, f->value, fact_shown(*f, s)};
        out.now = f->value;
        return out;
    }
    auto r = resolve_metric(c, s, missing);
    if (!r) return out;
    out.result = tri(holds(r->lhs, c.op, c.value));
    out.cited = r->cited;
    out.now = r->now;
    return out;
}

// The evaluated tree, so the leaves that decided the outcome can be cited.
struct Node {
    Tri result = Tri::Unknown;
    std::vector<Node> children;
    std::optional<CitedValue> cited;
};

Node eval(const Condition& c, const Scope& s, std::vector<std::string>& missing) {
    Node n;
    if (c.kind == Condition::Kind::Leaf) {
        LeafResult l = eval_leaf(c.leaf, s, missing);
        n.result = l.result;
        n.cited = std::move(l.cited);
        return n;
    }
    for (const auto& child : c.children) n.children.push_back(eval(child, s, missing));
    auto count = [&](Tri t) {
        return std::count_if(n.children.begin(), n.children.end(), [&](const Node& x) { return x.result == t; });
    };
    switch (c.kind) {
        case Condition::Kind::All:
            n.result = count(Tri::False) ? Tri::False : count(Tri::Unknown) ? Tri::Unknown : Tri::True;
            break;
        case Condition::Kind::Any:
            n.result = count(Tri::True) ? Tri::True : count(Tri::Unknown) ? Tri::Unknown : Tri::False;
            break;
        case Condition::Kind::Not: {
            const Tri t = n.children.empty() ? Tri::Unknown : n.children.front().result;
            n.result = t == Tri::True ? Tri::False : t == Tri::False ? Tri::True : Tri::Unknown;
            break;
        }
        case Condition::Kind::Leaf: break;
    }
    return n;
}

// Leaves that justify `n.result`: for all() True every child, False the False
// ones; for any() True the True ones, False every child; not() flips. An
// Unknown outcome is explained by `missing`, not by values.
void deciding(const Node& n, Condition::Kind kind, std::vector<CitedValue>& out, const Condition& c) {
    if (n.result == Tri::Unknown) return;
    if (kind == Condition::Kind::Leaf) {
        if (n.cited) out.push_back(*n.cited);
        return;
    }
    for (size_t i = 0; i < n.children.size(); ++i) {
        const Node& ch = n.children[i];
        bool take = false;
        switch (kind) {
            case Condition::Kind::All: take = n.result == Tri::True || ch.result == Tri::False; break;
            case Condition::Kind::Any: take = n.result == Tri::False || ch.result == Tri::True; break;
            case Condition::Kind::Not: take = true; break;
            case Condition::Kind::Leaf: break;
        }
        if (take) deciding(ch, c.children[i].kind, out, c.children[i]);
    }
}

void cite(std::vector<CitedValue>& cited, CitedValue v) {
    for (auto& c : cited)
        if (c.name == v.name && c.labels == v.labels) {
            if (c.comparison.empty() || c.comparison.rfind("(in bucket", 0) == 0) c.comparison = v.comparison;
            else if (!v.comparison.empty() && c.comparison.find(v.comparison) == std::string::npos)
                c.comparison += "; " + v.comparison;
            return;
        }
    cited.push_back(std::move(v));
}

std::optional<CitedValue> evidence_entry(const std::string& name, const Scope& s) {
    if (const Metric* m = s.metric(name))
        return CitedValue{m->name, m->labels, m->value, m->unit, "", m->provenance, "",
                          format_value(m->value, m->unit)};
    if (const Fact* f = s.fact(name))
        return CitedValue{f->name, f->labels, 0, "", "", f->provenance, f->value, fact_shown(*f, s)};
    if (const HistogramMetric* h = s.histogram(name); h && !h->hist.empty()) {
        const PercentileEstimate est = h->hist.percentile(99);
        return CitedValue{name + " p99", h->labels, est.value, h->unit,
                          "(in bucket " + format_number(est.lo) + ".." + format_value(est.hi, h->unit) + ")",
                          h->provenance, "", format_value(est.value, h->unit)};
    }
    return std::nullopt;
}

std::string fill(const std::string& text, const Rule& rule, const Scope& s) {
    const std::string resolved = resolve_clauses(text, [&](const std::string& name) {
        return (!rule.for_each.empty() && name == rule.for_each) || s.metric(name) || s.fact(name);
    });
    return fill_placeholders(resolved, [&](const std::string& name) -> std::string {
        if (!rule.for_each.empty() && name == rule.for_each)
            return rule.for_each == kCgroupLabel ? cgroup_shown(s.evidence(), s.instance()) : s.instance();
        if (const Metric* m = s.metric(name)) return format_value(m->value, m->unit);
        if (const Fact* f = s.fact(name)) return fact_shown(*f, s);
        return "(" + name + " not measured)";
    });
}

std::string render_verify(const Comparison& c, const Scope& s) {
    std::string lhs = c.fact.empty() ? c.metric : c.fact;
    if (c.percentile) lhs += " " + percentile_name(*c.percentile);
    if (!c.ratio_of.empty()) lhs += " / " + c.ratio_of;
    std::vector<std::string> ignored;
    const LeafResult now = eval_leaf(c, s, ignored);
    std::string rhs;
    if (!c.fact.empty()) {
        if (!c.one_of.empty()) {
            for (const auto& v : c.one_of) rhs += (rhs.empty() ? "" : ", ") + v;
            rhs = "in [" + rhs + "]";
        } else {
            rhs = to_string(c.op) + " " + c.text;
        }
    } else if (!c.ratio_of.empty()) {
        rhs = to_string(c.op) + " " + format_number(c.value);
    } else {
        rhs = to_string(c.op) + " " + format_value(c.value, now.cited ? now.cited->unit : "");
    }
    return lhs + " " + rhs + " (now " + (now.now.empty() ? "not measured" : now.now) + ")";
}

RuleResult evaluate_one(const Rule& rule, const Evidence& ev, const std::string& instance) {
    const Scope s(rule, ev, instance);
    RuleResult r;
    r.rule = &rule;
    r.instance = instance;
    const Node root = eval(rule.when, s, r.missing);
    r.outcome = root.result;
    for (const auto& name : rule.evidence)
        if (auto v = evidence_entry(name, s)) cite(r.cited, std::move(*v));
    std::vector<CitedValue> decided;
    deciding(root, rule.when.kind, decided, rule.when);
    for (auto& v : decided) cite(r.cited, std::move(v));
    if (!rule.share_metric.empty())
        if (const Metric* m = s.metric(rule.share_metric)) r.share_pct = m->value;
    for (const auto& v : rule.verify) r.verify.push_back(render_verify(v, s));
    // The prose only a finding shows: on a host with hundreds of disks,
    // filling it for every rule on every idle device was a fifth of the
    // analysis.
    if (r.outcome == Tri::True) {
        r.title = fill(rule.title, rule, s);
        r.mechanism = fill(rule.mechanism, rule, s);
        for (Fix f : rule.fixes) {
            f.action = fill(f.action, rule, s);
            r.fixes.push_back(std::move(f));
        }
    }
    std::sort(r.missing.begin(), r.missing.end());
    r.missing.erase(std::unique(r.missing.begin(), r.missing.end()), r.missing.end());
    return r;
}

}  // namespace

std::vector<RuleResult> evaluate_rules(const RuleSet& rules, const Evidence& ev) {
    std::vector<RuleResult> out;
    // Each label key's instances once, not once per rule (each is a scan of
    // the whole evidence).
    std::map<std::string, std::vector<std::string>> instances_of;
    for (const auto& rule : rules.rules) {
        if (rule.for_each.empty()) {
            out.push_back(evaluate_one(rule, ev, ""));
            continue;
        }
        auto [known, fresh] = instances_of.try_emplace(rule.for_each);
        if (fresh) known->second = ev.instances(rule.for_each);
        const std::vector<std::string>& instances = known->second;
        if (instances.empty()) {
            // Nothing to evaluate on: say so rather than leave the rule out.
            RuleResult r;
            r.rule = &rule;
            r.outcome = Tri::Unknown;
            r.missing.push_back("no " + rule.for_each + " in the evidence");
            out.push_back(std::move(r));
            continue;
        }
        for (const auto& inst : instances) out.push_back(evaluate_one(rule, ev, inst));
    }
    return out;
}

}  // namespace iodiag
