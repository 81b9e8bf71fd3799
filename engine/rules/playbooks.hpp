// Playbooks: remediation steps per cause, playbooks/<id>.yaml.
//
//   id: block-scheduler               # must equal the file name without .yaml
//   title: Choose the I/O scheduler for the device type
//   applies_to: [block_queue.scheduler_none_on_rotational]   # rule ids
//   why: >                            # the mechanism the steps act on
//     ...
//   steps:    [{do: "what to do", command: "optional shell line"}]
//   verify:   [{do: ..., command: ...}]
//   rollback: [{do: ..., command: ...}]
//
// Loaded like the rules: every problem is a Diagnostic with file:line:col and a
// stable code (E001 syntax, E002 missing key, E003 unknown key, E007 duplicate
// id, E009 wrong type, E014 unreadable, E015 id differs from the file name).
#pragma once

#include <string>
#include <vector>

#include "engine/rules/rules.hpp"

namespace iodiag {

struct PlaybookStep {
    std::string action;    // `do:`
    std::string command;   // optional shell command
};

struct Playbook {
    std::string id;
    std::string title;
    std::vector<std::string> applies_to;
    std::string why;
    std::vector<PlaybookStep> steps;
    std::vector<PlaybookStep> verify;
    std::vector<PlaybookStep> rollback;
    SourcePos pos;
};

struct PlaybookSet {
    std::vector<Playbook> playbooks;   // sorted by id
    std::vector<Diagnostic> diagnostics;
    bool ok() const;
    const Playbook* find(const std::string& id) const;
    std::vector<std::string> ids() const;   // for LoadContext::playbook_ids
};

// Loads every *.yaml under each path (a file or a directory). Never throws.
PlaybookSet load_playbooks(const std::vector<std::string>& paths);
// One playbook from a string; `file` names it for positions and the id check.
PlaybookSet load_playbook_from_string(const std::string& yaml, const std::string& file);

// W003 for each applies_to entry that names no loaded rule.
std::vector<Diagnostic> check_playbook_rules(const PlaybookSet& playbooks, const RuleSet& rules);

// Human-readable text: title, why, numbered steps with commands, verify, rollback.
std::string render_playbook(const Playbook& p);

}  // namespace iodiag
