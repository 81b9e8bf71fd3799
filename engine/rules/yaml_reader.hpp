// Shared by the rule and playbook loaders: reading YAML files into nodes with
// positions, and typed access that turns every problem into a Diagnostic
// (never an exception) so one lint run reports all of them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/rules/rules.hpp"

namespace iodiag::yamlr {

struct Document {
    std::string file;
    YAML::Node root;   // Null node for an empty file
};

// Rule and playbook files are written by hand (the shipped ones are ~10 KiB
// each): anything larger is refused with E014 before it is parsed.
inline constexpr size_t kMaxYamlFileBytes = size_t{4} << 20;

// Expands each path (a file or a directory's *.yaml / *.yml, sorted) into files.
// A path that does not exist is reported as E014.
std::vector<std::string> yaml_files(const std::vector<std::string>& paths,
                                    std::vector<Diagnostic>& out);
// Reads and parses one file (E014 unreadable or too large, E001 syntax).
// nullopt on failure.
std::optional<Document> read_document(const std::string& file, std::vector<Diagnostic>& out);
std::optional<Document> parse_document(const std::string& text, const std::string& file,
                                       std::vector<Diagnostic>& out);

// Diagnostics sink bound to one file.
class Reporter {
public:
    Reporter(std::string file, std::vector<Diagnostic>& out) : file_(std::move(file)), out_(out) {}
    const std::string& file() const { return file_; }
    SourcePos pos(const YAML::Node& n) const;
    void error(const std::string& code, const YAML::Node& at, const std::string& message);
    void error(const std::string& code, const SourcePos& at, const std::string& message);
    void warning(const std::string& code, const YAML::Node& at, const std::string& message);
    size_t error_count() const;

    // Checks that `node` is a map (E009) and has no keys outside `allowed` (E003).
    bool expect_map(const YAML::Node& node, const std::string& what,
                    const std::set<std::string>& allowed);
    // E002 when `key` is missing from map `node`.
    bool require(const YAML::Node& node, const std::string& key, const std::string& what);
    // A scalar's text (E009 if it is not a scalar). nullopt when absent or wrong.
    std::optional<std::string> scalar(const YAML::Node& map, const std::string& key);
    std::optional<double> number(const YAML::Node& map, const std::string& key);
    // A sequence (E009 if present and not one, then an empty node); iterate it.
    YAML::Node sequence(const YAML::Node& map, const std::string& key);

private:
    std::string file_;
    std::vector<Diagnostic>& out_;
};

// " (did you mean 'X'?)" for the closest of `known` to a misspelt `name`
// (edit distance), or "" when none is close.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

// Removes repeated diagnostics (same text), keeping the first occurrence.
void deduplicate(std::vector<Diagnostic>& diags);

}  // namespace iodiag::yamlr
