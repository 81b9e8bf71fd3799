// The rule loader: reader (YAML files -> nodes with positions) then checker
// (names against the catalog, instance keys, macros, placeholders, playbooks).
// Every problem becomes a Diagnostic with file:line:col and a stable code; the
// checker keeps going after an error so one lint run reports all of them.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "engine/rules/rule_text.hpp"
#include "engine/rules/rules.hpp"
#include "engine/rules/yaml_reader.hpp"

namespace iodiag {

namespace {

using yamlr::Reporter;
using Kind = MetricSpec::Kind;

const std::set<std::string> kTopKeys{"macros", "rules"};
const std::set<std::string> kRuleKeys{"id",           "layer",     "severity", "confidence",
                                      "for_each",     "title",     "when",     "share_metric",
                                      "mechanism",    "evidence",  "fixes",    "verify",
                                      "supersedes"};
const std::set<std::string> kLeafKeys{"metric", "percentile", "ratio_of", "fact", "op", "value", "in"};
const std::set<std::string> kFixKeys{"priority", "action", "playbook"};
const std::vector<std::string> kCombinators{"all", "any", "not", "macro"};

std::string joined(const std::vector<std::string>& v, const std::string& sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

std::string kind_word(Kind k) {
    switch (k) {
        case Kind::Metric: return "metric";
        case Kind::Fact: return "fact";
        case Kind::Histogram: return "histogram";
    }
    return "name";
}

std::optional<CmpOp> parse_op(const std::string& s) {
    static const std::map<std::string, CmpOp> ops{{">", CmpOp::Gt},  {">=", CmpOp::Ge},
                                                  {"<", CmpOp::Lt},  {"<=", CmpOp::Le},
                                                  {"==", CmpOp::Eq}, {"!=", CmpOp::Ne}};
    auto it = ops.find(s);
    if (it == ops.end()) return std::nullopt;
    return it->second;
}

struct MacroDef {
    YAML::Node body;
    std::string file;
    SourcePos pos;
    bool used = false;
};

// The rule whose names are being checked: its instance label and where the
// loader records each name's instance key. nullptr while a macro is checked on
// its own (instance keys depend on the rule that uses it).
struct RuleScope {
    std::string for_each;
    std::map<std::string, std::string>* instance_keys = nullptr;
};

class Checker {
public:
    Checker(const LoadContext& ctx, std::vector<Diagnostic>& out) : ctx_(ctx), out_(out) {}

    void collect_macros(const yamlr::Document& doc);
    void check_macros_alone();
    void check_rules(const yamlr::Document& doc, std::vector<Rule>& rules);
    void report_unused_macros();

private:
    size_t errors() const {
        return static_cast<size_t>(
            std::count_if(out_.begin(), out_.end(), [](const Diagnostic& d) { return d.error; }));
    }
    void rule(const YAML::Node& n, Reporter& rep, std::vector<Rule>& rules);
    Condition condition(const YAML::Node& n, Reporter& rep, const RuleScope* scope,
                        std::vector<std::string>& stack);
    Comparison comparison(const YAML::Node& n, Reporter& rep, const RuleScope* scope,
                          const std::string& what);
    bool check_name(const std::string& name, std::vector<Kind> allowed, const YAML::Node& at,
                    Reporter& rep, const RuleScope* scope);
    void check_placeholders(const std::string& text, const YAML::Node& at, Reporter& rep,
                            const RuleScope& scope);
    std::string suggestion(const std::string& name) const;
    bool instance_key_known(const std::string& key) const;

    const LoadContext& ctx_;
    std::vector<Diagnostic>& out_;
    std::map<std::string, MacroDef> macros_;
    std::map<std::string, SourcePos> rule_ids_;
};

std::string Checker::suggestion(const std::string& name) const {
    if (!ctx_.catalog) return "";
    std::vector<std::string> names;
    for (const auto& [n, spec] : ctx_.catalog->all()) names.push_back(n);
    return yamlr::did_you_mean(name, names);
}

bool Checker::instance_key_known(const std::string& key) const {
    if (!ctx_.catalog) return true;
    for (const auto& [n, spec] : ctx_.catalog->all())
        if (spec.instance_key == key) return true;
    return false;
}

bool Checker::check_name(const std::string& name, std::vector<Kind> allowed, const YAML::Node& at,
                         Reporter& rep, const RuleScope* scope) {
    if (!ctx_.catalog) return true;
    const MetricSpec* s = ctx_.catalog->find(name);
    const Kind want = allowed.front();
    if (!s) {
        std::vector<std::string> words;
        for (Kind k : allowed) words.push_back(kind_word(k));
        rep.error("E004", at, "unknown " + joined(words, " or ") + " '" + name + "'" + suggestion(name));
        return false;
    }
    if (std::find(allowed.begin(), allowed.end(), s->kind) == allowed.end()) {
        std::string why;
        if (s->kind == Kind::Histogram)
            why = "'" + name + "' is a histogram: compare one of its percentiles with 'percentile: 99'";
        else if (s->kind == Kind::Fact)
            why = "'" + name + "' is a fact (text): compare it with 'fact: " + name + "'";
        else if (want == Kind::Histogram)
            why = "'" + name + "' is a metric, not a histogram: 'percentile:' needs a histogram";
        else
            why = "'" + name + "' is a metric, not a " + kind_word(want) + ": use 'metric: " + name + "'";
        rep.error("E004", at, why);
        return false;
    }
    if (scope) {
        if (!s->instance_key.empty() && s->instance_key != scope->for_each) {
            rep.error("E013", at,
                      scope->for_each.empty()
                          ? "'" + name + "' is per " + s->instance_key +
                                " but the rule is global (add 'for_each: " + s->instance_key + "')"
                          : "'" + name + "' is per " + s->instance_key + " but the rule runs for each " +
                                scope->for_each);
            return false;
        }
        if (scope->instance_keys) (*scope->instance_keys)[name] = s->instance_key;
    }
    return true;
}

Comparison Checker::comparison(const YAML::Node& n, Reporter& rep, const RuleScope* scope,
                               const std::string& what) {
    Comparison c;
    c.pos = rep.pos(n);
    c.pos.file = rep.file();
    if (!rep.expect_map(n, what, kLeafKeys)) return c;
    const bool has_metric = static_cast<bool>(n["metric"]);
    const bool has_fact = static_cast<bool>(n["fact"]);
    if (has_metric && has_fact) {
        rep.error("E005", n, what + " has both 'metric' and 'fact': a comparison is one or the other");
        return c;
    }
    if (!has_metric && !has_fact) {
        rep.error("E002", n, what + " needs 'metric:' or 'fact:' (or all/any/not/macro)");
        return c;
    }
    if (has_metric) {
        c.metric = rep.scalar(n, "metric").value_or("");
        if (n["in"]) rep.error("E005", n["in"], "'in:' is for facts; a metric compares with op/value");
        if (n["percentile"]) {
            if (auto p = rep.number(n, "percentile")) {
                if (*p <= 0 || *p > 100)
                    rep.error("E005", n["percentile"], "percentile must be in (0, 100]");
                c.percentile = *p;
            }
        }
        if (!c.metric.empty())
            check_name(c.metric, {c.percentile ? Kind::Histogram : Kind::Metric}, n["metric"], rep, scope);
        if (n["ratio_of"]) {
            c.ratio_of = rep.scalar(n, "ratio_of").value_or("");
            if (!c.ratio_of.empty()) check_name(c.ratio_of, {Kind::Metric}, n["ratio_of"], rep, scope);
        }
        if (rep.require(n, "op", what)) {
            if (auto op = rep.scalar(n, "op")) {
                if (auto parsed = parse_op(*op))
                    c.op = *parsed;
                else
                    rep.error("E005", n["op"], "unknown operator '" + *op + "' (use >, >=, <, <=, ==, !=)");
            }
        }
        if (rep.require(n, "value", what))
            if (auto v = rep.number(n, "value")) c.value = *v;
        return c;
    }
    c.fact = rep.scalar(n, "fact").value_or("");
    if (!c.fact.empty()) check_name(c.fact, {Kind::Fact}, n["fact"], rep, scope);
    for (const char* k : {"percentile", "ratio_of"})
        if (n[k]) rep.error("E005", n[k], std::string("'") + k + "' is for metrics; a fact compares as text");
    if (n["in"]) {
        if (n["op"] || n["value"])
            rep.error("E005", n, what + " uses 'in:' and op/value: use one of them");
        const YAML::Node list = rep.sequence(n, "in");
        for (const auto& item : list) {
            if (!item.IsScalar())
                rep.error("E009", item, "'in:' entries must be single values");
            else
                c.one_of.push_back(item.Scalar());
        }
        if (list.IsSequence() && list.size() == 0) rep.error("E005", n["in"], "'in:' is an empty list");
        c.op = CmpOp::Eq;
        return c;
    }
    if (rep.require(n, "op", what)) {
        if (auto op = rep.scalar(n, "op")) {
            auto parsed = parse_op(*op);
            if (!parsed || (*parsed != CmpOp::Eq && *parsed != CmpOp::Ne))
                rep.error("E005", n["op"], "a fact compares as text: use == or != (or 'in:'), not '" + *op + "'");
            else
                c.op = *parsed;
        }
    }
    if (rep.require(n, "value", what)) c.text = rep.scalar(n, "value").value_or("");
    return c;
}

Condition Checker::condition(const YAML::Node& n, Reporter& rep, const RuleScope* scope,
                             std::vector<std::string>& stack) {
    Condition c;
    c.pos = rep.pos(n);
    if (!n.IsMap()) {
        rep.error("E009", n, "a condition must be a map: all/any/not/macro or a metric/fact comparison");
        return c;
    }
    std::string which;
    for (const auto& k : kCombinators) {
        if (!n[k]) continue;
        if (!which.empty()) {
            rep.error("E005", n, "a condition has both '" + which + "' and '" + k + "': nest them");
            return c;
        }
        which = k;
    }
    if (which.empty()) {
        c.kind = Condition::Kind::Leaf;
        c.leaf = comparison(n, rep, scope, "a comparison");
        return c;
    }
    rep.expect_map(n, "a '" + which + "' condition", {which});
    const YAML::Node body = n[which];
    if (which == "all" || which == "any") {
        c.kind = which == "all" ? Condition::Kind::All : Condition::Kind::Any;
        if (!body.IsSequence()) {
            rep.error("E009", body, "'" + which + "' must be a list of conditions");
            return c;
        }
        if (body.size() == 0) rep.error("E005", body, "'" + which + "' is an empty list");
        for (const auto& child : body) c.children.push_back(condition(child, rep, scope, stack));
        return c;
    }
    if (which == "not") {
        c.kind = Condition::Kind::Not;
        c.children.push_back(condition(body, rep, scope, stack));
        return c;
    }
    // macro: expanded in place, so the evaluator never sees macros.
    if (!body.IsScalar()) {
        rep.error("E009", body, "'macro' must name a macro");
        return c;
    }
    const std::string name = body.Scalar();
    auto it = macros_.find(name);
    if (it == macros_.end()) {
        std::vector<std::string> known;
        for (const auto& [k, v] : macros_) known.push_back(k);
        rep.error("E012", body,
                  "unknown macro '" + name + "'" + (known.empty() ? "" : " (known: " + joined(known) + ")"));
        return c;
    }
    if (std::find(stack.begin(), stack.end(), name) != stack.end()) {
        // The same text as when the first macro of the stack is checked on its
        // own, so deduplication leaves one line per place that closes a cycle.
        rep.error("E012", body, "macro cycle: " + joined(stack, " -> ") + " -> " + name);
        return c;
    }
    if (scope) it->second.used = true;
    stack.push_back(name);
    Reporter macro_rep(it->second.file, out_);
    Condition expanded = condition(it->second.body, macro_rep, scope, stack);
    stack.pop_back();
    return expanded;
}

void Checker::check_placeholders(const std::string& text, const YAML::Node& at, Reporter& rep,
                                 const RuleScope& scope) {
    if (const std::string err = clause_error(text); !err.empty()) rep.error("E011", at, err);
    for (const auto& ph : find_placeholders(text)) {
        if (!scope.for_each.empty() && ph.name == scope.for_each) continue;
        if (!ctx_.catalog) continue;
        const MetricSpec* s = ctx_.catalog->find(ph.name);
        if (!s && instance_key_known(ph.name) && ph.name != scope.for_each) {
            rep.error("E011", at,
                      "placeholder '{" + ph.name + "}' needs 'for_each: " + ph.name + "'" +
                          (scope.for_each.empty() ? "" : " (this rule runs for each " + scope.for_each + ")"));
            continue;
        }
        if (!s || s->kind == Kind::Histogram) {
            rep.error("E011", at,
                      "unknown placeholder '{" + ph.name + "}': use " +
                          (scope.for_each.empty() ? "" : "{" + scope.for_each + "} or ") +
                          "a catalogued metric or fact" + (s ? "" : suggestion(ph.name)));
            continue;
        }
        check_name(ph.name, {Kind::Metric, Kind::Fact}, at, rep, &scope);
    }
}

void Checker::rule(const YAML::Node& n, Reporter& rep, std::vector<Rule>& rules) {
    const size_t errors_before = errors();
    if (!rep.expect_map(n, "a rule", kRuleKeys)) return;
    Rule r;
    r.pos = rep.pos(n);
    const std::string what = n["id"] && n["id"].IsScalar() ? "rule '" + n["id"].Scalar() + "'" : "a rule";
    for (const char* key : {"id", "layer", "severity", "title", "when", "mechanism"}) rep.require(n, key, what);

    r.id = rep.scalar(n, "id").value_or("");
    if (!r.id.empty()) {
        if (auto it = rule_ids_.find(r.id); it != rule_ids_.end())
            rep.error("E007", n["id"],
                      "duplicate rule id '" + r.id + "' (first defined at " + it->second.file + ":" +
                          std::to_string(it->second.line) + ")");
        else
            rule_ids_[r.id] = r.pos;
    }
    if (auto layer = rep.scalar(n, "layer")) {
        r.layer = *layer;
        const auto& known = known_layers();
        // "{layer}": a rule run for each layer names the layer of its instance.
        if (r.layer == kLayerOfInstance) {
            if (rep.scalar(n, "for_each").value_or("") != "layer")
                rep.error("E008", n["layer"], "layer '" + r.layer + "' needs 'for_each: layer'");
        } else if (std::find(known.begin(), known.end(), r.layer) == known.end()) {
            rep.error("E008", n["layer"], "unknown layer '" + r.layer + "' (known: " + joined(known) + ", or " +
                                              kLayerOfInstance + " with for_each: layer)");
        }
    }
    if (auto sev = rep.scalar(n, "severity")) {
        if (*sev == "info") r.severity = Severity::Info;
        else if (*sev == "warning") r.severity = Severity::Warning;
        else if (*sev == "critical") r.severity = Severity::Critical;
        else rep.error("E006", n["severity"], "severity must be info, warning or critical, not '" + *sev + "'");
    }
    if (auto conf = rep.number(n, "confidence")) {
        if (*conf < 0 || *conf > 1)
            rep.error("E006", n["confidence"], "confidence must be between 0 and 1");
        else
            r.confidence = *conf;
    }
    if (auto fe = rep.scalar(n, "for_each")) {
        r.for_each = *fe;
        if (!instance_key_known(r.for_each))
            rep.error("E013", n["for_each"], "no catalogued metric has the instance label '" + r.for_each + "'");
    }
    RuleScope scope{r.for_each, &r.instance_keys};
    r.title = rep.scalar(n, "title").value_or("");
    r.mechanism = rep.scalar(n, "mechanism").value_or("");
    if (n["when"]) {
        std::vector<std::string> stack;
        r.when = condition(n["when"], rep, &scope, stack);
    }
    if (auto share = rep.scalar(n, "share_metric")) {
        r.share_metric = *share;
        if (check_name(r.share_metric, {Kind::Metric}, n["share_metric"], rep, &scope) && ctx_.catalog) {
            const MetricSpec* s = ctx_.catalog->find(r.share_metric);
            if (s->unit != "pct")
                rep.error("E005", n["share_metric"],
                          "share_metric must be a percentage (unit pct); '" + r.share_metric + "' is in '" +
                              s->unit + "'");
        }
    }
    for (const auto& e : rep.sequence(n, "evidence")) {
        if (!e.IsScalar()) {
            rep.error("E009", e, "evidence entries must be names of metrics, facts or histograms");
            continue;
        }
        if (check_name(e.Scalar(), {Kind::Metric, Kind::Fact, Kind::Histogram}, e, rep, &scope))
            r.evidence.push_back(e.Scalar());
    }
    for (const auto& e : rep.sequence(n, "supersedes")) {
        if (!e.IsScalar()) {
            rep.error("E009", e, "supersedes entries must be rule ids");
            continue;
        }
        r.supersedes.push_back(e.Scalar());
    }
    for (const auto& f : rep.sequence(n, "fixes")) {
        if (!rep.expect_map(f, "a fix", kFixKeys)) continue;
        Fix fix;
        rep.require(f, "priority", "a fix");
        rep.require(f, "action", "a fix");
        if (auto p = rep.scalar(f, "priority")) {
            if (p->size() == 2 && (*p)[0] == 'P' && (*p)[1] >= '0' && (*p)[1] <= '5')
                fix.priority = static_cast<Priority>((*p)[1] - '0');
            else
                rep.error("E006", f["priority"], "priority must be P0..P5 (seed 000 §9.2), not '" + *p + "'");
        }
        fix.action = rep.scalar(f, "action").value_or("");
        if (f["action"]) check_placeholders(fix.action, f["action"], rep, scope);
        fix.playbook = rep.scalar(f, "playbook").value_or("");
        if (!fix.playbook.empty() && !ctx_.playbook_ids.empty() &&
            std::find(ctx_.playbook_ids.begin(), ctx_.playbook_ids.end(), fix.playbook) ==
                ctx_.playbook_ids.end())
            rep.error("E010", f["playbook"], "unknown playbook '" + fix.playbook + "' (no playbooks/" +
                                                 fix.playbook + ".yaml)");
        r.fixes.push_back(fix);
    }
    for (const auto& v : rep.sequence(n, "verify")) r.verify.push_back(comparison(v, rep, &scope, "a verify entry"));
    if (n["title"]) check_placeholders(r.title, n["title"], rep, scope);
    if (n["mechanism"]) check_placeholders(r.mechanism, n["mechanism"], rep, scope);

    r.pos.file = rep.file();
    if (errors() == errors_before) rules.push_back(std::move(r));
}

void Checker::collect_macros(const yamlr::Document& doc) {
    Reporter rep(doc.file, out_);
    if (doc.root.IsNull()) return;   // an empty file defines nothing
    if (!rep.expect_map(doc.root, "a rules file", kTopKeys)) return;
    const YAML::Node macros = doc.root["macros"];
    if (!macros) return;
    if (!macros.IsMap()) {
        rep.error("E009", macros, "'macros' must be a map of name: condition");
        return;
    }
    for (const auto& kv : macros) {
        const std::string name = kv.first.Scalar();
        if (auto it = macros_.find(name); it != macros_.end()) {
            rep.error("E007", kv.first,
                      "duplicate macro '" + name + "' (first defined at " + it->second.pos.file + ":" +
                          std::to_string(it->second.pos.line) + ")");
            continue;
        }
        macros_[name] = MacroDef{kv.second, doc.file, rep.pos(kv.first)};
    }
}

void Checker::check_macros_alone() {
    for (const auto& [name, def] : macros_) {
        Reporter rep(def.file, out_);
        std::vector<std::string> stack{name};
        condition(def.body, rep, nullptr, stack);
    }
}

void Checker::check_rules(const yamlr::Document& doc, std::vector<Rule>& rules) {
    Reporter rep(doc.file, out_);
    if (!doc.root.IsMap()) return;   // reported by collect_macros
    for (const auto& r : rep.sequence(doc.root, "rules")) rule(r, rep, rules);
}

void Checker::report_unused_macros() {
    for (const auto& [name, def] : macros_)
        if (!def.used)
            out_.push_back({"W001", false, def.pos, "macro '" + name + "' is defined but no rule uses it"});
}

RuleSet check(const std::vector<yamlr::Document>& docs, const LoadContext& ctx,
              std::vector<Diagnostic> diags) {
    RuleSet set;
    Checker checker(ctx, diags);
    try {
        for (const auto& d : docs) checker.collect_macros(d);
        checker.check_macros_alone();
        for (const auto& d : docs) checker.check_rules(d, set.rules);
        checker.report_unused_macros();
    } catch (const YAML::Exception& e) {
        // Should not happen (every access is checked); never crash a lint run.
        diags.push_back({"E009", true, {docs.empty() ? "" : docs.front().file, e.mark.line + 1, e.mark.column + 1},
                         std::string("unexpected YAML structure: ") + e.what()});
    }
    yamlr::deduplicate(diags);
    // File order (files are loaded sorted), then position, like a compiler.
    std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
        return std::tie(a.pos.file, a.pos.line, a.pos.column) < std::tie(b.pos.file, b.pos.line, b.pos.column);
    });
    set.diagnostics = std::move(diags);
    return set;
}

}  // namespace

RuleSet load_rules(const std::vector<std::string>& paths, const LoadContext& ctx) {
    std::vector<Diagnostic> diags;
    std::vector<yamlr::Document> docs;
    for (const auto& f : yamlr::yaml_files(paths, diags))
        if (auto d = yamlr::read_document(f, diags)) docs.push_back(std::move(*d));
    return check(docs, ctx, std::move(diags));
}

RuleSet load_rules_from_string(const std::string& yaml, const std::string& file, const LoadContext& ctx) {
    std::vector<Diagnostic> diags;
    std::vector<yamlr::Document> docs;
    if (auto d = yamlr::parse_document(yaml, file, diags)) docs.push_back(std::move(*d));
    return check(docs, ctx, std::move(diags));
}

}  // namespace iodiag
