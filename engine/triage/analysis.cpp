#include "engine/triage/analysis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "engine/evidence/application_label.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/format.hpp"
#include "engine/triage/ceph_layers.hpp"
#include "engine/triage/ceph_host_findings.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "engine/triage/finding_fold.hpp"
#include "engine/triage/judgement.hpp"
#include "engine/triage/layer_table.hpp"
#include "engine/triage/not_evaluated.hpp"
#include "engine/triage/sufferer_choice.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/triage/triage_graph.hpp"
#include "engine/triage/who_suffered.hpp"

namespace iodiag {

std::string to_string(LayerState s) {
    switch (s) {
        case LayerState::Abnormal: return "abnormal";
        case LayerState::Normal: return "normal";
        case LayerState::Unjudged: return "not judged";
        case LayerState::NotObserved: return "not observed";
    }
    return "?";
}

namespace {

// Weight of a finding whose share of latency nobody measured (its layer has no
// latency attribution): a prior by severity, kept below what a measured
// dominant share scores, so measured causes rank first (Amdahl).
double unmeasured_weight(Severity s) {
    switch (s) {
        case Severity::Critical: return 0.5;
        case Severity::Warning: return 0.3;
        case Severity::Info: return 0.02;
    }
    return 0;
}

// A finding's layer whose latency was not observed keeps the rule's
// confidence only in part: the rule saw a symptom, not the time it cost.
constexpr double kUnobservedLayerFactor = 0.75;

// The part of the applications' slow time a block-time finding explains
// (their wait on the device times the stage's share of its block time), when
// the syscall attribution measured their wait on that device; else nothing.
// A tag wait (Q2G) is spent before the request exists, in the syscall's own
// block_queue class: its part is the applications' tag wait on the device.
std::optional<double> apps_latency_explained(const Finding& f, const Evidence& ev) {
    if (!f.share_pct || f.share_metric.rfind("block.", 0) != 0 || f.instance_key != "device") return std::nullopt;
    if (f.share_metric == "block.q2g_share_pct")
        if (const Metric* t = ev.find_metric("device.tag_wait_share_pct", {{"device", f.instance}})) return t->value;
    const Metric* w = ev.find_metric("device.io_wait_share_pct", {{"device", f.instance}});
    if (!w) return std::nullopt;
    return *f.share_pct * std::min(100.0, w->value) / 100.0;
}

// Below this part of the applications' slow time, a block-layer cause is not
// what they felt: removing it entirely would cut their slow time by less than
// a twentieth, within the run-to-run spread of a share over a few seconds.
// Applied only where the applications' own requests were measured per device.
constexpr double kFeltPct = 5;

Finding make_finding(const RuleResult& r, const Evidence& ev) {
    const Rule& rule = *r.rule;
    Finding f;
    f.rule_id = rule.id;
    f.layer = rule.layer == kLayerOfInstance ? r.instance : rule.layer;
    f.severity = rule.severity;
    f.instance_key = rule.for_each;
    f.instance = r.instance;
    f.title = r.title;
    f.mechanism = r.mechanism;
    f.culprit = r.culprit;
    f.share_pct = r.share_pct;
    if (f.share_pct) f.share_metric = rule.share_metric;
    f.confidence = rule.confidence * (ev.layer_observed(f.layer) ? 1.0 : kUnobservedLayerFactor);
    f.score = (f.share_pct ? *f.share_pct / 100.0 : unmeasured_weight(f.severity)) * f.confidence;
    // A share of block time (how much of a device's request time a stage
    // took) says nothing of what the applications waited for. Where the
    // syscall attribution measured that (the slow syscalls' wait on this
    // device, their own requests' where measured), the finding ranks by the
    // part of the applications' latency the stage explains: their wait on the
    // device times the stage's part of its block time. Queueing of another
    // program's writes on a disk the applications barely waited on does not
    // outrank the cause they felt.
    if (const std::optional<double> felt = apps_latency_explained(f, ev)) f.score = *felt / 100.0 * f.confidence;
    f.evidence = r.cited;
    f.fixes = r.fixes;   // placeholders filled for this instance
    f.verify = r.verify;
    f.source = rule.pos.file + ":" + std::to_string(rule.pos.line);
    return f;
}

// FNV-1a, 64 bit: small, and stable across builds and hosts (std::hash is not).
std::string fnv1a_hex(const std::string& text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// Same cause on the same host -> same fingerprint: host plus the sorted set of
// (rule, instance) of the abnormal findings. Figures are left out on purpose.
std::string fingerprint(const std::string& host, const std::vector<Finding>& findings) {
    std::set<std::string> causes;
    for (const auto& f : findings)
        if (f.severity != Severity::Info) causes.insert(f.rule_id + "@" + f.instance);
    std::string key = host;
    for (const auto& c : causes) key += "|" + c;
    return fnv1a_hex(key);
}

std::vector<OrderedFix> order_fixes(const std::vector<Finding>& ranked) {
    std::vector<OrderedFix> fixes;
    std::set<std::string> seen;
    for (const auto& f : ranked) {
        for (const auto& fix : f.fixes) {
            if (!seen.insert(fix.action + "|" + f.instance).second) continue;
            fixes.push_back({fix.priority, fix.action, fix.playbook, f.rule_id, f.instance, f.share_pct});
        }
    }
    // Share first (a P4 fix for the layer holding 80 % beats a P0 fix for 2 %),
    // then priority. Findings without a measured share keep their rank order.
    std::stable_sort(fixes.begin(), fixes.end(), [](const OrderedFix& a, const OrderedFix& b) {
        const double sa = a.share_pct.value_or(-1), sb = b.share_pct.value_or(-1);
        if (sa != sb) return sa > sb;
        return a.priority < b.priority;
    });
    return fixes;
}

// Total duration of an exemplar: syscalls carry total_us, block I/Os q2c_us.
double exemplar_total(const Exemplar& e) {
    for (const char* key : {"total_us", "q2c_us"})
        if (auto it = e.values.find(key); it != e.values.end()) return it->second;
    return 0;
}

std::vector<Exemplar> slowest_exemplars(const Evidence& ev, size_t per_kind) {
    std::map<std::string, std::vector<Exemplar>> by_kind;
    for (const auto& e : ev.exemplars) by_kind[e.kind].push_back(e);
    std::vector<Exemplar> out;
    for (auto& [kind, list] : by_kind) {
        std::stable_sort(list.begin(), list.end(),
                         [](const Exemplar& a, const Exemplar& b) { return exemplar_total(a) > exemplar_total(b); });
        for (size_t i = 0; i < list.size() && i < per_kind; ++i) out.push_back(list[i]);
    }
    return out;
}

std::vector<HistogramMetric> distributions(const Evidence& ev) {
    std::vector<HistogramMetric> out;
    auto take = [&](const HistogramMetric& h) {
        if (!h.hist.empty()) out.push_back(h);
    };
    for (const auto& h : ev.histograms)
        if (h.name == "syscall.latency_us" || h.name == "fs.read_hit_us" || h.name == "fs.read_miss_us") take(h);
    const auto busy = busy_devices(ev);
    if (!busy.empty())
        for (const char* name : {"block.q2c_us", "block.d2c_us"})
            if (const HistogramMetric* h = ev.find_histogram(name, {{"device", busy.front()}})) take(*h);
    return out;
}

// One cause, one finding: a finding whose rule supersedes others absorbs their
// findings on the same instance, or on an instance it cites (a joined finding
// names the cgroup and the device it joins), their machine-wide findings
// that cite its instance, and their findings about its layer as a whole.
// Their evidence is kept (cited once), their share taken when this one has
// none.
// `rules` (each finding's rule, same order) is compacted with `fired`, so the
// two stay aligned for whatever runs after.
void fold_same_causes(std::vector<Finding>& fired, std::vector<const Rule*>& rules) {
    std::vector<bool> gone(fired.size(), false);
    // The instance as a whole token of a cited text ("vda (254:0)", "blkio:/g,memory:/h").
    auto names = [](const std::string& text, const std::string& instance) {
        for (size_t at = text.find(instance); at != std::string::npos; at = text.find(instance, at + 1)) {
            const size_t end = at + instance.size();
            const bool starts = at == 0 || std::string(" ,:(").find(text[at - 1]) != std::string::npos;
            const bool ends = end == text.size() || std::string(" ,)").find(text[end]) != std::string::npos;
            if (starts && ends) return true;
        }
        return false;
    };
    auto cites = [&](const Finding& f, const std::string& instance) {
        if (instance.empty()) return false;
        for (const auto& c : f.evidence) {
            if (names(c.text, instance)) return true;
            for (const auto& [k, v] : c.labels)
                if (v == instance) return true;
        }
        return false;
    };
    for (size_t i = 0; i < fired.size(); ++i) {
        if (gone[i] || rules[i]->supersedes.empty()) continue;
        Finding& f = fired[i];
        for (size_t j = 0; j < fired.size(); ++j) {
            if (j == i || gone[j]) continue;
            const Finding& g = fired[j];
            const auto& sup = rules[i]->supersedes;
            if (std::find(sup.begin(), sup.end(), g.rule_id) == sup.end()) continue;
            // A machine-wide finding (no instance) is the same cause where it
            // names this finding's instance (the device its fsyncs waited on);
            // one about this finding's whole layer (the layer's dominance)
            // is what this finding explains in it.
            const bool same = g.instance == f.instance || cites(f, g.instance) ||
                              (g.instance.empty() && cites(g, f.instance)) || g.instance == f.layer;
            if (!same) continue;
            gone[j] = true;
            f.folded.push_back(g.rule_id + "@" + g.instance);
            for (const auto& c : g.evidence) cite_once(f, c);
            if (!f.share_pct && g.share_pct) {
                f.share_pct = g.share_pct;
                f.share_metric = g.share_metric;
                f.score = *f.share_pct / 100.0 * f.confidence;
            }
            trim_end(f.mechanism);
            f.mechanism += " (Same cause as " + g.rule_id + (g.instance.empty() ? "" : " on " + g.instance) +
                           ", folded into this finding with its evidence.)";
        }
    }
    drop_gone(fired, gone);
    drop_gone(rules, gone);
}

// Another application counts as suffering beside the first when its slow
// syscalls took at least this part of the first's slow time, or of the
// window (one thread of it waited a quarter of the time): a program with a
// few slow calls beside the one that waited all along is a bystander. The
// window's part, because the times are thread-seconds: a single-threaded
// reader blocked on a slow device all the window took a quarter of four
// writer threads' time (seed 51's two_apps_device: 0.24997) and was left out.
constexpr double kOtherSuffererMinWeight = 0.25;

// The evidence as the rules would see it had `app` suffered most: its own
// breakdown (attr.apps.*{app}) in place of attr.app.*, derived again.
Evidence as_if_sufferer(const Evidence& collected, const std::string& app) {
    Evidence ev = collected;
    const std::string from = "attr.apps.", to = "attr.app.";
    ev.metrics.erase(std::remove_if(ev.metrics.begin(), ev.metrics.end(),
                                    [&](const Metric& m) { return m.name.rfind(to, 0) == 0 && m.labels.empty(); }),
                     ev.metrics.end());
    // The facts naming the sufferer are this application's below.
    ev.facts.erase(std::remove_if(ev.facts.begin(), ev.facts.end(),
                                  [](const Fact& f) {
                                      return f.name == "attr.app.name" || f.name == "attr.slow.top_comm" ||
                                             f.name == "attr.slow.top_pid" || f.name == "attr.slow.top_cgroup" ||
                                             f.name == "attr.slow.top_file";
                                  }),
                   ev.facts.end());
    std::vector<Metric> own;
    for (const auto& m : collected.metrics)
        if (m.name.rfind(from, 0) == 0 && m.name != "attr.apps.rank" && m.labels.size() == 1 &&
            m.labels.begin()->first == "app" && m.labels.begin()->second == app) {
            Metric c = m;
            c.name = to + m.name.substr(from.size());
            c.labels.clear();
            own.push_back(std::move(c));
        }
    const Provenance p = own.empty() ? Provenance{"derived", ""} : own.front().provenance;
    for (auto& m : own) ev.metrics.push_back(std::move(m));
    if (const Metric* basis = collected.find_metric("attr.app.basis_us"))
        ev.add_metric("attr.app.basis_us", {}, basis->value, basis->unit, basis->provenance);
    ev.add_fact("attr.app.name", {}, app, p);
    // The rules' texts name the top sufferer's process, cgroup and file
    // (attr.slow.top_*, the machine's slow set's): here, this application's
    // own, from its processes' syscall time and its slow exemplars.
    const Metric* top_proc = nullptr;
    for (const auto& m : collected.metrics)
        if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app &&
            (!top_proc || m.value > top_proc->value))
            top_proc = &m;
    std::map<std::string, double> by_file;
    for (const auto& e : collected.exemplars)
        if (e.kind == "syscall" && application_label(e.labels) == app && e.labels.count("file"))
            if (const auto t = e.values.find("total_us"); t != e.values.end()) by_file[e.labels.at("file")] += t->second;
    const auto top_file = std::max_element(by_file.begin(), by_file.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
    const Provenance mine{"derived", "the process of " + app + " with the most traced syscall time "
                                     "(syscall.proc.time_us) and the file of its slow exemplars with the most time"};
    ev.add_fact("attr.slow.top_comm", {}, app, mine);
    if (top_proc) {
        if (top_proc->labels.count("pid")) ev.add_fact("attr.slow.top_pid", {}, top_proc->labels.at("pid"), mine);
        if (top_proc->labels.count("cgroup"))
            ev.add_fact("attr.slow.top_cgroup", {}, top_proc->labels.at("cgroup"), mine);
    }
    if (top_file != by_file.end()) ev.add_fact("attr.slow.top_file", {}, top_file->first, mine);
    add_derived_metrics(ev);
    return ev;
}

// Whether a rule's share is the suffering application's own, so that judged
// again for another application it says what that one felt: its breakdown
// (attr.sufferer.*, and the judgement model's judge.share_pct built on it)
// and the device shares split from its own I/O wait by its own requests'
// block time (add_device_judgement; the machine's slow set's only where the
// application's breakdown was not measured, and another application is
// judged only where it was).
bool share_is_the_sufferers(const std::string& metric) {
    static const std::set<std::string> device_shares = {"device.slow_share_pct", "device.io_wait_share_pct",
                                                        "device.scheduler_wait_share_pct",
                                                        "device.tag_wait_share_pct",
                                                        // its wait x the others' share (contention_*.cpp)
                                                        "device.contention_share_pct", "cpu.contention_share_pct"};
    return metric.rfind("attr.sufferer.", 0) == 0 || metric == "judge.share_pct" || device_shares.count(metric) > 0;
}

// Two applications slowed by two different causes at once: the rules judge
// the application that suffered most (attr.app.*); each other one broken down
// by the collector (attr.apps.*{app}) whose slow time is comparable is judged
// the same way on its own slow syscalls, and a cause found for it that the
// first did not feel joins the findings. Its score is scaled by its slow time
// against the first's, so causes rank by the time they cost; its share stays
// its own (the title names the application).
std::vector<Finding> other_sufferers_findings(const Evidence& collected, const Evidence& ev, const RuleSet& rules,
                                              const std::vector<Finding>& fired) {
    std::vector<Finding> out;
    const Fact* first = ev.find_fact("attr.app.name");
    const Metric* first_time = ev.find_metric("attr.app.time_us");
    if (!first || !first_time || first_time->value <= 0) return out;
    for (const auto& app : ev.instances("app")) {
        if (app == first->value) continue;
        const Metric* t = ev.find_metric("attr.apps.time_us", {{"app", app}});
        if (!t) continue;
        const double weight = t->value / first_time->value;
        const double window_us = ev.window.duration_s * 1e6;
        if (weight < kOtherSuffererMinWeight && !(window_us > 0 && t->value >= kOtherSuffererMinWeight * window_us))
            continue;
        const Evidence other = as_if_sufferer(collected, app);
        for (const auto& r : evaluate_rules(rules, other)) {
            if (r.outcome != Tri::True || !share_is_the_sufferers(r.rule->share_metric)) continue;
            Finding f = make_finding(r, other);
            if (!f.share_pct || unfelt_share(f, other, kFeltPct)) continue;
            // The first application felt this cause too: it is one finding.
            const bool known = std::any_of(fired.begin(), fired.end(), [&](const Finding& g) {
                return g.rule_id == f.rule_id && g.instance == f.instance && !unfelt_share(g, ev, kFeltPct);
            });
            if (known) continue;
            f.score *= std::min(1.0, weight);
            f.sufferer = app;
            out.push_back(std::move(f));
        }
    }
    return out;
}

// The evidence the rules judge, derived as if the application the verdict is
// about suffered most: the one that lost the most time to other programs
// (sufferer_choice.hpp) where that is not the one with the most slow time;
// the operator's --victim stays whatever the others lost.
Evidence evidence_of_the_sufferer(const Evidence& collected) {
    Evidence ev = collected;
    add_derived_metrics(ev);
    const Fact* first = ev.find_fact("attr.app.name");
    const Fact* given = ev.find_fact("attr.victim.application");
    if (!first || (given && given->value == first->value)) return ev;
    std::vector<SuffererCandidate> candidates{time_lost_to_others(ev, first->value)};
    std::vector<Evidence> as_if;
    for (const auto& app : ev.instances("app")) {
        if (app == first->value || !ev.find_metric("attr.apps.time_us", {{"app", app}})) continue;
        as_if.push_back(as_if_sufferer(collected, app));
        candidates.push_back(time_lost_to_others(as_if.back(), app));
    }
    const auto chosen = choose_sufferer(candidates);
    if (!chosen) return ev;
    Evidence out = std::move(as_if[*chosen - 1]);
    for (auto& f : out.facts)
        if (f.name == "attr.app.name") f.provenance = {"derived", choice_reason(candidates, *chosen)};
    return out;
}

}  // namespace

Evidence judged_evidence(const Evidence& collected) { return evidence_of_the_sufferer(collected); }

Verdict analyze(const Evidence& collected, const RuleSet& rules) {
    auto judged = std::make_shared<Evidence>(judged_evidence(collected));
    const Evidence& ev = *judged;

    Verdict v;
    v.host = ev.host;
    v.kernel = ev.kernel;
    v.window = ev.window;
    v.collectors = ev.collectors;
    v.lost_events = lost_events_of(ev);

    std::vector<Finding> fired;
    std::vector<const Rule*> fired_rules;
    std::vector<const RuleResult*> unknown;
    const std::vector<RuleResult> results = evaluate_rules(rules, ev);
    const std::vector<std::string> layers = layers_in_play(ev);
    for (const auto& r : results) {
        if (r.outcome == Tri::True) {
            fired.push_back(make_finding(r, ev));
            fired_rules.push_back(r.rule);
        }
        if (r.outcome == Tri::Unknown && !ceph_rule_out_of_play(r.rule->layer, r.rule->for_each, layers))
            unknown.push_back(&r);
    }
    for (auto& f : other_sufferers_findings(collected, ev, rules, fired)) {
        const auto rule = std::find_if(rules.rules.begin(), rules.rules.end(),
                                       [&](const Rule& r) { return r.id == f.rule_id; });
        fired_rules.push_back(&*rule);
        fired.push_back(std::move(f));
    }
    fold_same_causes(fired, fired_rules);
    yield_osd_findings_to_ceph(fired, ev);
    summarize_not_evaluated(v, unknown, ev);

    std::map<std::string, LayerState> state;
    size_t observed = 0;
    for (const auto& l : layers) {
        const bool seen = ev.layer_observed(l);
        observed += seen;
        state[l] = seen ? LayerState::Normal : LayerState::NotObserved;
    }
    for (const auto& f : fired)
        if (f.severity != Severity::Info && state.count(f.layer)) state[f.layer] = LayerState::Abnormal;
    // A cause found in a layer the syscall node drills into (dirty throttling,
    // reclaim, locks, a cgroup limit) makes the syscall layer abnormal too: the
    // application's operations were held by it, whether or not a syscall rule
    // of its own fired. The walk then drills into it instead of concluding
    // "storage is fine, look at the application".
    for (const auto& f : fired) {
        if (f.severity == Severity::Info || state[layer::kSyscall] != LayerState::Normal) continue;
        for (const auto& e : triage_edges())
            if (e.from == layer::kSyscall && e.to == f.layer && e.when.count(LayerState::Abnormal))
                state[layer::kSyscall] = LayerState::Abnormal;
    }
    v.coverage = static_cast<double>(observed) / static_cast<double>(layers.size());
    // An observed layer where nothing fired is normal only if its rules could
    // judge it: a global rule, or a per-device rule on a device that did I/O,
    // left unknown with part of its evidence present means it could not.
    const auto busy = busy_devices(ev);
    std::map<std::string, std::string> unjudged_why;
    for (const RuleResult* r : unknown) {
        const std::string& l = r->rule->layer;
        if (!state.count(l) || state[l] != LayerState::Normal || r->cited.empty()) continue;
        const bool active = r->rule->for_each.empty() ||
                            (r->rule->for_each == "device" &&
                             std::find(busy.begin(), busy.end(), r->instance) != busy.end());
        if (!active) continue;
        state[l] = LayerState::Unjudged;
        std::string why = r->rule->id + (r->instance.empty() ? "" : " on " + r->instance) + " lacks ";
        for (size_t i = 0; i < r->missing.size(); ++i) why += (i ? ", " : "") + r->missing[i].substr(0, r->missing[i].find(" ("));
        unjudged_why[l] = why;
    }
    // What the rules could not judge the model may have (its criteria need
    // less: the layer's own distribution, who else used it): judged normal,
    // with the model's reason, never left "not judged".
    const std::map<std::string, std::string> judged_normal = model_judged_normal(ev);
    for (const auto& [l, why] : judged_normal)
        if (state.count(l) && state[l] == LayerState::Unjudged) {
            state[l] = LayerState::Normal;
            unjudged_why[l] = "judged normal by the model (docs/judgement.md), although " + unjudged_why[l] + ": " + why;
        }

    auto summary_of = [&](const std::string& l) {
        std::string s;
        for (const auto& f : fired)
            if (f.layer == l && f.severity != Severity::Info) s += (s.empty() ? "" : "; ") + f.title;
        const std::string figures = layer_figures(ev, l);
        if (!figures.empty()) s += (s.empty() ? "" : " — ") + figures;
        if (state[l] == LayerState::NotObserved) s += (s.empty() ? "" : " — ") + layer_observer(ev, l);
        if (state[l] == LayerState::Unjudged) s += (s.empty() ? "" : " — ") + ("not judged: " + unjudged_why[l]);
        else if (state[l] == LayerState::Normal && judged_normal.count(l))
            s += (s.empty() ? "" : " — ") + (unjudged_why.count(l) ? unjudged_why.at(l) : judged_normal.at(l));
        return s;
    };
    const WalkResult walk = walk_triage([&](const std::string& l) { return state.at(l); }, summary_of, layers);
    v.trail = walk.trail;

    // Only where the applications' own requests were measured per device: a
    // wait the syscall attribution does not see as device time (an
    // asynchronous submitter's completions) does not make a device's queue
    // unfelt.
    const bool own_requests_measured = !app_own_q2c(ev).empty();
    for (auto& f : fired) {
        const bool on_path = walk.visited.count(f.layer) > 0;
        const std::optional<double> explained = apps_latency_explained(f, ev);
        const bool unfelt = own_requests_measured && explained && *explained < kFeltPct;
        // Another application's cause was judged on its own slow syscalls.
        const std::optional<double> nobody = f.sufferer.empty() ? unfelt_share(f, ev, kFeltPct) : std::nullopt;
        if (nobody) {
            trim_end(f.mechanism);
            f.mechanism += " (A note, not a finding: the slow syscalls in the window hardly waited for it (" +
                           format_number(*nobody) + " % of the suffering application's slow time or of the "
                           "machine's slow set, " + f.share_metric + "): what it describes delayed nobody "
                           "observed.)";
        }
        if (f.severity == Severity::Info || !on_path || unfelt || nobody) {
            if (!on_path) f.mechanism += " (Seen off the triage path: the walk did not reach this layer.)";
            if (unfelt && on_path) {
                trim_end(f.mechanism);
                f.mechanism += " (A note, not a finding: the applications' slow syscalls spent " +
                               format_number(*explained) + " % of their time in this stage on " + f.instance +
                               " (their wait on the device, device.io_wait_share_pct, times this stage's part of "
                               "its block time), so removing it would not make what they wait for noticeably faster.)";
            }
            v.notes.push_back(std::move(f));
        } else {
            v.findings.push_back(std::move(f));
        }
    }
    // The invariant's finding stands only where no other finding names its layer.
    drop_covered_dominant_layer(v.findings);
    // A finding ranks by the share of time it explains: one with no measured
    // share, or a share of 0, never ranks above one with a share.
    auto by_score = [](const Finding& a, const Finding& b) {
        const bool a_explains = a.share_pct && *a.share_pct > 0, b_explains = b.share_pct && *b.share_pct > 0;
        if (a_explains != b_explains) return a_explains;
        if (a.score != b.score) return a.score > b.score;
        if (a.rule_id != b.rule_id) return a.rule_id < b.rule_id;
        return a.instance < b.instance;
    };
    std::sort(v.findings.begin(), v.findings.end(), by_score);
    std::sort(v.notes.begin(), v.notes.end(), by_score);
    for (const auto& f : v.findings) v.status = std::max(v.status, f.severity);
    v.blind = blind_reason(ev);

    v.fixes = order_fixes(v.findings);
    std::vector<std::pair<std::string, LayerState>> states;
    for (const auto& l : layers) states.push_back({l, state[l]});
    v.layers = build_layer_table(ev, states);
    v.who_suffered = who_suffered(ev);
    v.caused_by = caused_by(v.findings);
    v.slowest = slowest_exemplars(ev, 5);
    v.distributions = distributions(ev);
    v.cgroup_names = cited_cgroup_names(v, ev);
    v.fingerprint = fingerprint(v.host, v.findings);
    v.judged_on = std::move(judged);
    return v;
}

}  // namespace iodiag
