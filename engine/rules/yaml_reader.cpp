#include "engine/rules/yaml_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace iodiag::yamlr {

namespace fs = std::filesystem;

namespace {
bool is_yaml(const fs::path& p) { return p.extension() == ".yaml" || p.extension() == ".yml"; }

std::string too_large(uintmax_t bytes) {
    return "file is " + std::to_string(bytes) + " bytes, more than the " + std::to_string(kMaxYamlFileBytes >> 20) +
           " MiB a rule or playbook file may have";
}

std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Map: return "a map";
        case YAML::NodeType::Sequence: return "a list";
        case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
        case YAML::NodeType::Null: return "nothing";
        default: return "an undefined value";
    }
}
}  // namespace

std::vector<std::string> yaml_files(const std::vector<std::string>& paths,
                                    std::vector<Diagnostic>& out) {
    std::vector<std::string> files;
    for (const auto& p : paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<std::string> in_dir;
            for (const auto& e : fs::directory_iterator(p, ec))
                if (e.is_regular_file(ec) && is_yaml(e.path())) in_dir.push_back(e.path().string());
            if (ec) out.push_back({"E014", true, {p, 0, 0}, "cannot list directory: " + ec.message()});
            std::sort(in_dir.begin(), in_dir.end());
            files.insert(files.end(), in_dir.begin(), in_dir.end());
        } else if (fs::exists(p, ec)) {
            files.push_back(p);
        } else {
            out.push_back({"E014", true, {p, 0, 0}, "no such file or directory"});
        }
    }
    return files;
}

std::optional<Document> parse_document(const std::string& text, const std::string& file,
                                       std::vector<Diagnostic>& out) {
    if (text.size() > kMaxYamlFileBytes) {
        out.push_back({"E014", true, {file, 0, 0}, too_large(text.size())});
        return std::nullopt;
    }
    try {
        return Document{file, YAML::Load(text)};
    } catch (const YAML::Exception& e) {
        out.push_back({"E001", true, {file, e.mark.line + 1, e.mark.column + 1},
                       "YAML syntax error: " + e.msg});
        return std::nullopt;
    }
}

std::optional<Document> read_document(const std::string& file, std::vector<Diagnostic>& out) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        out.push_back({"E014", true, {file, 0, 0}, "cannot read file"});
        return std::nullopt;
    }
    // Refused before it is read: a huge file (or /dev/zero) must not cost memory.
    std::error_code ec;
    if (const auto size = fs::file_size(file, ec); !ec && size > kMaxYamlFileBytes) {
        out.push_back({"E014", true, {file, 0, 0}, too_large(size)});
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
        out.push_back({"E014", true, {file, 0, 0}, "read error"});
        return std::nullopt;
    }
    return parse_document(ss.str(), file, out);
}

SourcePos Reporter::pos(const YAML::Node& n) const {
    try {
        const YAML::Mark m = n.Mark();
        if (m.is_null()) return {file_, 0, 0};
        return {file_, m.line + 1, m.column + 1};
    } catch (const YAML::Exception&) {
        return {file_, 0, 0};
    }
}

void Reporter::error(const std::string& code, const YAML::Node& at, const std::string& message) {
    out_.push_back({code, true, pos(at), message});
}
void Reporter::error(const std::string& code, const SourcePos& at, const std::string& message) {
    out_.push_back({code, true, at, message});
}
void Reporter::warning(const std::string& code, const YAML::Node& at, const std::string& message) {
    out_.push_back({code, false, pos(at), message});
}

size_t Reporter::error_count() const {
    return static_cast<size_t>(std::count_if(out_.begin(), out_.end(), [&](const Diagnostic& d) {
        return d.error && d.pos.file == file_;
    }));
}

bool Reporter::expect_map(const YAML::Node& node, const std::string& what,
                          const std::set<std::string>& allowed) {
    if (!node.IsMap()) {
        error("E009", node, what + " must be a map, found " + describe(node));
        return false;
    }
    for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        if (!allowed.count(key)) {
            std::string known;
            for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
            error("E003", kv.first, "unknown key '" + key + "' in " + what + " (known: " + known + ")");
        }
    }
    return true;
}

bool Reporter::require(const YAML::Node& node, const std::string& key, const std::string& what) {
    if (node[key]) return true;
    error("E002", node, what + " lacks the required key '" + key + "'");
    return false;
}

std::optional<std::string> Reporter::scalar(const YAML::Node& map, const std::string& key) {
    const YAML::Node n = map[key];
    if (!n) return std::nullopt;
    if (!n.IsScalar()) {
        error("E009", n, "'" + key + "' must be a single value, found " + describe(n));
        return std::nullopt;
    }
    return n.Scalar();
}

std::optional<double> Reporter::number(const YAML::Node& map, const std::string& key) {
    const YAML::Node n = map[key];
    if (!n) return std::nullopt;
    if (n.IsScalar()) {
        try {
            return n.as<double>();
        } catch (const YAML::Exception&) {
        }
    }
    error("E009", n, "'" + key + "' must be a number, found " + describe(n));
    return std::nullopt;
}

YAML::Node Reporter::sequence(const YAML::Node& map, const std::string& key) {
    const YAML::Node n = map[key];
    if (n && !n.IsSequence()) {
        error("E009", n, "'" + key + "' must be a list, found " + describe(n));
        return YAML::Node();   // iterates as empty
    }
    return n;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}
}  // namespace

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
    std::string best;
    size_t best_d = std::max<size_t>(2, name.size() / 4) + 1;
    for (const auto& k : known) {
        const size_t d = edit_distance(name, k);
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

void deduplicate(std::vector<Diagnostic>& diags) {
    std::set<std::string> seen;
    std::vector<Diagnostic> out;
    for (auto& d : diags)
        if (seen.insert(d.to_string()).second) out.push_back(std::move(d));
    diags = std::move(out);
}

}  // namespace iodiag::yamlr
