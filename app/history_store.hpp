// iodiag check's state directory (/var/lib/iodiag by default): one evidence
// bundle per run, named iodiag-check-<UTC start>Z.json, written atomically,
// bounded by count and bytes, oldest pruned first.
//
// It never deletes what it did not write: only regular files (not links) whose
// name has that exact pattern and whose content is an iodiag bundle of this
// host are pruned. A corrupt bundle, a bundle of another host, a file too big
// to be one: skipped, named in the check's output, left in place. A state
// directory that cannot be created, listed or written: the check still runs
// (without history, or without saving tonight) and says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/history_metrics.hpp"

namespace iodiag::cli {

inline const std::string kDefaultStateDir = "/var/lib/iodiag";

struct HistoryLimits {
    size_t keep = 30;                      // bundles kept, tonight's included
    uint64_t max_bytes = 128ull << 20;     // bytes of kept bundles, tonight's included
};

struct SkippedFile {
    std::string name;
    std::string why;
};

struct HistoryLoad {
    std::vector<RunSummary> runs;          // this host's readable bundles
    std::vector<SkippedFile> skipped;      // named, not compared, not deleted
    std::vector<std::string> problems;     // the directory itself
};

class HistoryStore {
public:
    HistoryStore(std::string dir, HistoryLimits limits) : dir_(std::move(dir)), limits_(limits) {}
    const std::string& dir() const { return dir_; }

    // Reads every bundle of the directory that matches the name pattern
    // (creating the directory, mode 0750, if it is missing).
    HistoryLoad load(const std::string& host);
    // Saves tonight's bundle; the path, or nullopt with the reason in `error`.
    std::optional<std::string> save(const Evidence& ev, std::string* error);
    // Removes the oldest of this host's bundles (never `keep_path`) until the
    // limits hold; the names removed. Problems are appended to `problems`.
    std::vector<std::string> prune(const std::string& host, const std::string& keep_path,
                                   std::vector<std::string>& problems);

    // True for a file name this store writes.
    static bool is_run_name(const std::string& name);

private:
    struct Entry {
        std::string name;
        uint64_t bytes = 0;
        double start_unix = 0;
        std::string host;
    };
    std::string dir_;
    HistoryLimits limits_;
    std::vector<Entry> owned_;   // valid bundles found by load()
};

}  // namespace iodiag::cli
