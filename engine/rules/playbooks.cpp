#include "engine/rules/playbooks.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "engine/rules/yaml_reader.hpp"

namespace iodiag {

namespace {

const std::set<std::string> kKeys{"id", "title", "applies_to", "why", "steps", "verify", "rollback"};
const std::set<std::string> kStepKeys{"do", "command"};

std::vector<PlaybookStep> steps(const YAML::Node& n, const std::string& key, yamlr::Reporter& rep) {
    std::vector<PlaybookStep> out;
    for (const auto& s : rep.sequence(n, key)) {
        if (!rep.expect_map(s, "a '" + key + "' entry", kStepKeys)) continue;
        rep.require(s, "do", "a '" + key + "' entry");
        out.push_back({rep.scalar(s, "do").value_or(""), rep.scalar(s, "command").value_or("")});
    }
    return out;
}

void read_playbook(const yamlr::Document& doc, PlaybookSet& set) {
    yamlr::Reporter rep(doc.file, set.diagnostics);
    const size_t before = set.diagnostics.size();
    if (!rep.expect_map(doc.root, "a playbook", kKeys)) return;
    Playbook p;
    p.pos = rep.pos(doc.root);
    for (const char* k : {"id", "title", "why", "steps"}) rep.require(doc.root, k, "the playbook");
    p.id = rep.scalar(doc.root, "id").value_or("");
    const std::string stem = std::filesystem::path(doc.file).stem().string();
    if (!p.id.empty() && p.id != stem)
        rep.error("E015", doc.root["id"], "playbook id '" + p.id + "' differs from its file name '" + stem + ".yaml'");
    if (const Playbook* first = set.find(p.id); first && !p.id.empty())
        rep.error("E007", doc.root["id"], "duplicate playbook id '" + p.id + "' (first defined at " +
                                              first->pos.file + ":" + std::to_string(first->pos.line) + ")");
    p.title = rep.scalar(doc.root, "title").value_or("");
    p.why = rep.scalar(doc.root, "why").value_or("");
    for (const auto& r : rep.sequence(doc.root, "applies_to")) {
        if (r.IsScalar())
            p.applies_to.push_back(r.Scalar());
        else
            rep.error("E009", r, "applies_to entries must be rule ids");
    }
    p.steps = steps(doc.root, "steps", rep);
    p.verify = steps(doc.root, "verify", rep);
    p.rollback = steps(doc.root, "rollback", rep);
    const bool has_error = std::any_of(set.diagnostics.begin() + static_cast<long>(before),
                                       set.diagnostics.end(), [](const Diagnostic& d) { return d.error; });
    if (!has_error) set.playbooks.push_back(std::move(p));
}

void finish(PlaybookSet& set) {
    std::sort(set.playbooks.begin(), set.playbooks.end(),
              [](const Playbook& a, const Playbook& b) { return a.id < b.id; });
    yamlr::deduplicate(set.diagnostics);
}

void read_all(const std::vector<yamlr::Document>& docs, PlaybookSet& set) {
    for (const auto& d : docs) {
        try {
            read_playbook(d, set);
        } catch (const YAML::Exception& e) {
            set.diagnostics.push_back({"E009", true, {d.file, e.mark.line + 1, e.mark.column + 1},
                                       std::string("unexpected YAML structure: ") + e.what()});
        }
    }
    finish(set);
}

// Folded YAML text arrives as one long line: wrap it for a terminal.
std::string wrap(const std::string& text, size_t width, const std::string& indent) {
    std::string out, line;
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '\n') {
            out += indent + line + "\n";
            line.clear();
            ++i;
            continue;
        }
        size_t j = text.find_first_of(" \n", i);
        if (j == std::string::npos) j = text.size();
        const std::string word = text.substr(i, j - i);
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            out += indent + line + "\n";
            line.clear();
        }
        if (!word.empty()) line += (line.empty() ? "" : " ") + word;
        i = (j < text.size() && text[j] == ' ') ? j + 1 : j;
    }
    if (!line.empty()) out += indent + line + "\n";
    return out;
}

void render_steps(std::string& out, const std::string& heading, const std::vector<PlaybookStep>& steps) {
    if (steps.empty()) return;
    out += "\n" + heading + ":\n";
    for (size_t i = 0; i < steps.size(); ++i) {
        std::string text = wrap(steps[i].action, 72, "     ");
        text.replace(0, 5, "  " + std::to_string(i + 1) + ". ");
        out += text;
        if (!steps[i].command.empty()) {
            // Multi-line commands stay aligned under the step.
            std::string cmd = steps[i].command;
            while (!cmd.empty() && cmd.back() == '\n') cmd.pop_back();
            size_t start = 0;
            while (start <= cmd.size()) {
                const size_t nl = cmd.find('\n', start);
                out += "       $ " + cmd.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
                if (nl == std::string::npos) break;
                start = nl + 1;
            }
        }
    }
}

}  // namespace

bool PlaybookSet::ok() const {
    return std::none_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) { return d.error; });
}

const Playbook* PlaybookSet::find(const std::string& id) const {
    for (const auto& p : playbooks)
        if (p.id == id) return &p;
    return nullptr;
}

std::vector<std::string> PlaybookSet::ids() const {
    std::vector<std::string> v;
    for (const auto& p : playbooks) v.push_back(p.id);
    return v;
}

PlaybookSet load_playbooks(const std::vector<std::string>& paths) {
    PlaybookSet set;
    std::vector<yamlr::Document> docs;
    for (const auto& f : yamlr::yaml_files(paths, set.diagnostics))
        if (auto d = yamlr::read_document(f, set.diagnostics)) docs.push_back(std::move(*d));
    read_all(docs, set);
    return set;
}

PlaybookSet load_playbook_from_string(const std::string& yaml, const std::string& file) {
    PlaybookSet set;
    std::vector<yamlr::Document> docs;
    if (auto d = yamlr::parse_document(yaml, file, set.diagnostics)) docs.push_back(std::move(*d));
    read_all(docs, set);
    return set;
}

std::vector<Diagnostic> check_playbook_rules(const PlaybookSet& playbooks, const RuleSet& rules) {
    std::set<std::string> ids;
    for (const auto& r : rules.rules) ids.insert(r.id);
    std::vector<Diagnostic> out;
    for (const auto& p : playbooks.playbooks)
        for (const auto& r : p.applies_to)
            if (!ids.count(r))
                out.push_back({"W003", false, p.pos, "playbook '" + p.id + "' applies to unknown rule '" + r + "'"});
    return out;
}

std::string render_playbook(const Playbook& p) {
    std::string out = p.title + "  [" + p.id + "]\n";
    if (!p.applies_to.empty()) {
        out += "Applies to:";
        for (const auto& r : p.applies_to) out += " " + r;
        out += "\n";
    }
    out += "\nWhy:\n";
    std::string why = p.why;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    out += wrap(why, 76, "  ");
    render_steps(out, "Steps", p.steps);
    render_steps(out, "Verify", p.verify);
    render_steps(out, "Rollback", p.rollback);
    return out;
}

}  // namespace iodiag
