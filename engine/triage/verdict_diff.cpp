#include "engine/triage/verdict_diff.hpp"

#include <map>

#include "engine/triage/analysis.hpp"

namespace iodiag {

namespace {

std::string status_text(const Verdict& v) { return v.findings.empty() ? "ok" : to_string(v.status); }

int status_rank(const std::string& s) {
    if (s == "critical") return 3;
    if (s == "warning") return 2;
    if (s == "info") return 1;
    return 0;
}

std::string key_of(const std::string& rule_id, const std::string& instance) { return rule_id + '\x1f' + instance; }

// Every fired finding of a verdict with where it was placed, in rank order.
struct Placed {
    const Finding* finding;
    const char* placement;
};

std::vector<Placed> placed(const Verdict& v) {
    std::vector<Placed> out;
    for (const auto& f : v.findings) out.push_back({&f, "finding"});
    for (const auto& f : v.notes) out.push_back({&f, "note"});
    return out;
}

void merge_value(std::vector<ValueChange>& values, const CitedValue& c, bool after_side) {
    ValueChange* slot = nullptr;
    for (auto& v : values)
        if (v.name == c.name && v.labels == c.labels) slot = &v;
    if (!slot) {
        values.push_back({c.name, c.labels, "", "", std::nullopt, std::nullopt, c.unit});
        slot = &values.back();
    }
    std::optional<double> numeric;
    if (c.text.empty()) numeric = c.value;
    (after_side ? slot->after : slot->before) = c.formatted;
    (after_side ? slot->after_value : slot->before_value) = numeric;
    if (slot->unit.empty()) slot->unit = c.unit;
}

FindingChange change_from(const Finding& f) {
    FindingChange c;
    c.rule_id = f.rule_id;
    c.instance_key = f.instance_key;
    c.instance = f.instance;
    c.layer = f.layer;
    c.severity = f.severity;
    c.title = f.title;
    return c;
}

const Rule* find_rule(const RuleSet& rules, const std::string& id) {
    for (const auto& r : rules.rules)
        if (r.id == id) return &r;
    return nullptr;
}

const RuleResult* find_result(const std::vector<RuleResult>& results, const Rule* rule, const std::string& instance) {
    for (const auto& r : results)
        if (r.rule == rule && r.instance == instance) return &r;
    return nullptr;
}

// The evidence a verdict was judged on; none for a hand-built verdict.
const Evidence& judged_on(const Verdict& v) {
    static const Evidence none;
    return v.judged_on ? *v.judged_on : none;
}

// Fills what the side lacking the finding says of its rule.
void add_other_side(FindingChange& c, const RuleSet& rules, const Evidence& other, bool other_is_after) {
    const Rule* rule = find_rule(rules, c.rule_id);
    if (!rule) {
        c.missing_other_side = {"rule " + c.rule_id + " is not in the rule set"};
        return;
    }
    RuleSet one;
    one.rules.push_back(*rule);
    const auto results = evaluate_rules(one, other);
    const RuleResult* r = find_result(results, &one.rules.front(), c.instance);
    if (!r) {
        c.missing_other_side = {"no " + c.instance_key + " " + c.instance + " in the evidence"};
        return;
    }
    c.other_side = r->outcome;
    c.missing_other_side = r->missing;
    for (const auto& v : r->cited) merge_value(c.values, v, other_is_after);
    (other_is_after ? c.share_after : c.share_before) = r->share_pct;
}

// Each verify comparison of the rule as a one-leaf rule of its own, so the
// evaluator (its instance lookup, percentiles, ratios) decides whether it holds.
void check_verify(FindingChange& c, const RuleSet& rules, const Evidence& after) {
    const Rule* rule = find_rule(rules, c.rule_id);
    if (!rule) return;   // the BEFORE texts stay, outcome Unknown
    RuleSet checks;
    for (const auto& cmp : rule->verify) {
        Rule r = *rule;
        r.when = Condition{};
        r.when.kind = Condition::Kind::Leaf;
        r.when.leaf = cmp;
        r.when.pos = cmp.pos;
        r.verify = {cmp};
        r.evidence.clear();
        r.fixes.clear();
        r.share_metric.clear();
        r.title.clear();
        r.mechanism.clear();
        checks.rules.push_back(std::move(r));
    }
    const auto results = evaluate_rules(checks, after);
    c.verify.resize(checks.rules.size());
    for (size_t i = 0; i < checks.rules.size(); ++i) {
        const RuleResult* r = find_result(results, &checks.rules[i], c.instance);
        c.verify[i].outcome = r ? r->outcome : Tri::Unknown;
        c.verify[i].after = r && !r->verify.empty() ? r->verify.front() : "";
    }
}

}  // namespace

bool VerdictDiff::got_worse() const {
    if (!smart.empty()) return true;
    if (status_rank(status_after) > status_rank(status_before)) return true;
    for (const auto& c : appeared)
        if (c.severity != Severity::Info) return true;
    return false;
}

VerdictDiff diff_verdicts(const Verdict& before, const Verdict& after) {
    VerdictDiff d;
    d.host_before = before.host;
    d.host_after = after.host;
    d.window_before = before.window;
    d.window_after = after.window;
    d.status_before = status_text(before);
    d.status_after = status_text(after);
    d.fingerprint_before = before.fingerprint;
    d.fingerprint_after = after.fingerprint;

    std::map<std::string, Placed> in_before, in_after;
    for (const auto& p : placed(before)) in_before.emplace(key_of(p.finding->rule_id, p.finding->instance), p);
    for (const auto& p : placed(after)) in_after.emplace(key_of(p.finding->rule_id, p.finding->instance), p);

    for (const auto& p : placed(before)) {
        if (in_after.count(key_of(p.finding->rule_id, p.finding->instance))) continue;
        FindingChange c = change_from(*p.finding);
        c.placement_before = p.placement;
        c.share_before = p.finding->share_pct;
        for (const auto& v : p.finding->evidence) merge_value(c.values, v, false);
        for (const auto& line : p.finding->verify) c.verify.push_back({line, "", Tri::Unknown});
        d.resolved.push_back(std::move(c));
    }
    for (const auto& p : placed(after)) {
        auto it = in_before.find(key_of(p.finding->rule_id, p.finding->instance));
        FindingChange c = change_from(*p.finding);
        c.placement_after = p.placement;
        c.share_after = p.finding->share_pct;
        if (it == in_before.end()) {
            for (const auto& v : p.finding->evidence) merge_value(c.values, v, true);
            d.appeared.push_back(std::move(c));
            continue;
        }
        const Finding& b = *it->second.finding;
        c.placement_before = it->second.placement;
        c.share_before = b.share_pct;
        c.other_side = Tri::True;   // both sides fired
        for (const auto& v : b.evidence) merge_value(c.values, v, false);
        for (const auto& v : p.finding->evidence) merge_value(c.values, v, true);
        d.persisting.push_back(std::move(c));
    }
    return d;
}

void add_rule_outcomes(VerdictDiff& diff, const RuleSet& rules, const Verdict& before, const Verdict& after) {
    for (auto* list : {&diff.resolved, &diff.persisting, &diff.appeared})
        for (auto& c : *list)
            if (const Rule* rule = find_rule(rules, c.rule_id)) c.share_metric = rule->share_metric;
    if (diff.resolved.empty() && diff.appeared.empty()) return;
    const Evidence& ev_before = judged_on(before);
    const Evidence& ev_after = judged_on(after);
    for (auto& c : diff.resolved) {
        add_other_side(c, rules, ev_after, true);
        check_verify(c, rules, ev_after);
    }
    for (auto& c : diff.appeared) add_other_side(c, rules, ev_before, false);
}

VerdictDiff diff_evidence(const Evidence& before, const Evidence& after, const RuleSet& rules) {
    const Verdict vb = analyze(before, rules), va = analyze(after, rules);
    VerdictDiff d = diff_verdicts(vb, va);
    add_rule_outcomes(d, rules, vb, va);
    return d;
}

}  // namespace iodiag
