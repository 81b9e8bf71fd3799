#include "app/history_store.hpp"
#include "engine/evidence/atomic_file.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <regex>

#include <sys/statvfs.h>
#include <unistd.h>

#include "engine/evidence/bundle.hpp"
#include "engine/evidence/format.hpp"

namespace iodiag::cli {

namespace fs = std::filesystem;

namespace {

std::string size_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// A check's bundle of a few seconds takes a few hundred KiB; a file with our
// name far bigger than that is not read (it would only cost memory and time).
constexpr uint64_t kMaxBundleBytes = 256ull << 20;

}  // namespace

bool HistoryStore::is_run_name(const std::string& name) {
    static const std::regex re(R"(^iodiag-check-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.json$)");
    return std::regex_match(name, re);
}

HistoryLoad HistoryStore::load(const std::string& host) {
    HistoryLoad out;
    owned_.clear();
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) {
        if (fs::create_directories(dir_, ec); ec) {
            out.problems.push_back("cannot create the state directory " + dir_ + ": " + ec.message());
            return out;
        }
        fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                        fs::perm_options::replace, ec);
    }
    std::vector<fs::path> files;
    fs::directory_iterator it(dir_, ec), end;
    for (; !ec && it != end; it.increment(ec))
        if (is_run_name(it->path().filename().string())) files.push_back(it->path());
    if (ec) out.problems.push_back("cannot list the state directory " + dir_ + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
        const std::string name = path.filename().string();
        const auto st = fs::symlink_status(path, ec);
        if (ec || !fs::is_regular_file(st)) {
            out.skipped.push_back({name, "not a regular file"});
            continue;
        }
        const uint64_t bytes = fs::file_size(path, ec);
        if (ec) {
            out.skipped.push_back({name, "cannot stat: " + ec.message()});
            continue;
        }
        if (bytes > kMaxBundleBytes) {
            out.skipped.push_back({name, size_text(bytes) + ": too big for a check's bundle, not read"});
            continue;
        }
        Evidence ev;
        try {
            ev = load_bundle(path.string());
        } catch (const std::exception& e) {
            out.skipped.push_back({name, std::string("corrupt, left in place: ") + e.what()});
            continue;
        }
        if (ev.host != host) {
            out.skipped.push_back({name, "a bundle of host '" + ev.host + "', not of " + host});
            continue;
        }
        out.runs.push_back(summarize_run(ev, name));
        owned_.push_back({name, bytes, ev.window.start_unix, ev.host});
    }
    return out;
}

std::optional<std::string> HistoryStore::save(const Evidence& ev, std::string* error) {
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) {
        *error = "the state directory " + dir_ + " does not exist";
        return std::nullopt;
    }
    if (::access(dir_.c_str(), W_OK) != 0) {
        *error = "the state directory " + dir_ + " is not writable: " + std::strerror(errno);
        return std::nullopt;
    }
    const std::string content = bundle_text(ev);
    struct statvfs vfs {};
    if (::statvfs(dir_.c_str(), &vfs) == 0) {
        const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
        if (free_bytes < content.size()) {
            *error = "the state directory " + dir_ + " is full: " + size_text(free_bytes) + " free, tonight's bundle needs " +
                     size_text(content.size());
            return std::nullopt;
        }
    }
    const std::string stamp = format_utc_stamp(ev.window.start_unix);
    std::string path = (fs::path(dir_) / ("iodiag-check-" + stamp + ".json")).string();
    for (int i = 2; fs::exists(path, ec); ++i)
        path = (fs::path(dir_) / ("iodiag-check-" + stamp + "-" + std::to_string(i) + ".json")).string();
    try {
        write_file_atomically(path, content);
    } catch (const std::exception& e) {
        *error = std::string("tonight's bundle was not saved: ") + e.what();
        return std::nullopt;
    }
    owned_.push_back({fs::path(path).filename().string(), content.size(), ev.window.start_unix, ev.host});
    return path;
}

std::vector<std::string> HistoryStore::prune(const std::string& host, const std::string& keep_path,
                                             std::vector<std::string>& problems) {
    const std::string keep_name = keep_path.empty() ? "" : fs::path(keep_path).filename().string();
    std::vector<Entry> mine;
    for (const auto& e : owned_)
        if (e.host == host) mine.push_back(e);
    std::stable_sort(mine.begin(), mine.end(), [](const Entry& a, const Entry& b) {
        return a.start_unix < b.start_unix || (a.start_unix == b.start_unix && a.name < b.name);
    });
    uint64_t bytes = 0;
    for (const auto& e : mine) bytes += e.bytes;
    size_t count = mine.size();
    std::vector<std::string> removed;
    for (const auto& e : mine) {
        if (count <= limits_.keep && bytes <= limits_.max_bytes) break;
        if (e.name == keep_name) continue;
        const fs::path path = fs::path(dir_) / e.name;
        std::error_code ec;
        // Checked again right before: still a regular file with our name.
        if (!is_run_name(e.name) || !fs::is_regular_file(fs::symlink_status(path, ec))) continue;
        if (!fs::remove(path, ec) || ec) {
            problems.push_back("cannot remove " + path.string() + ": " + (ec ? ec.message() : "gone"));
            continue;
        }
        removed.push_back(e.name);
        --count;
        bytes -= e.bytes;
    }
    if (bytes > limits_.max_bytes)
        problems.push_back("the kept bundles take " + size_text(bytes) + ", more than max_bytes (" +
                           size_text(limits_.max_bytes) + "): tonight's is never removed");
    owned_.erase(std::remove_if(owned_.begin(), owned_.end(),
                                [&](const Entry& e) {
                                    return std::find(removed.begin(), removed.end(), e.name) != removed.end();
                                }),
                 owned_.end());
    return removed;
}

}  // namespace iodiag::cli
