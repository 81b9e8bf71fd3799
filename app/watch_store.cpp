#include "app/watch_store.hpp"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <regex>
#include <stdexcept>

#include <unistd.h>

#include "engine/evidence/format.hpp"

namespace iodiag::cli {

namespace fs = std::filesystem;

namespace {

// stamp, then what the file is: the bundle, the record, or a temporary that
// a crash during an atomic write left behind (write_file_atomically's name).
const std::regex& own_file() {
    static const std::regex re(R"(^(watch-\d{8}T\d{6}Z(?:-\d+)?)\.(?:bundle\.json|json)(?:\.tmp\.\d+)?$)");
    return re;
}

}  // namespace

std::string capture_stamp(double t_unix) { return "watch-" + format_utc_stamp(t_unix); }

std::optional<double> parse_capture_stamp(const std::string& stamp) {
    std::tm tm{};
    const char* end = strptime(stamp.c_str(), "watch-%Y%m%dT%H%M%SZ", &tm);
    if (!end || (*end != '\0' && *end != '-')) return std::nullopt;
    return static_cast<double>(timegm(&tm));
}

void CaptureStore::prepare() const {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw std::runtime_error(dir_ + ": cannot create the capture directory: " + ec.message());
    if (!fs::is_directory(dir_)) throw std::runtime_error(dir_ + ": not a directory");
    if (::access(dir_.c_str(), W_OK | X_OK) != 0)
        throw std::runtime_error(dir_ + ": not writable (run as root, or give --dir)");
}

std::vector<StoredCapture> CaptureStore::list() const {
    std::map<std::string, StoredCapture> by_stamp;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        std::smatch m;
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file(ec) || !std::regex_match(name, m, own_file())) continue;
        const auto t = parse_capture_stamp(m[1]);
        if (!t) continue;
        auto& c = by_stamp[m[1]];
        c.stamp = m[1];
        c.t_unix = *t;
        c.files.push_back(e.path().string());
        c.bytes += e.file_size(ec);
    }
    std::vector<StoredCapture> out;
    for (auto& [_, c] : by_stamp) out.push_back(std::move(c));
    std::stable_sort(out.begin(), out.end(),
                     [](const StoredCapture& a, const StoredCapture& b) { return a.t_unix < b.t_unix; });
    return out;
}

std::optional<double> CaptureStore::last_capture_unix() const {
    const auto all = list();
    if (all.empty()) return std::nullopt;
    return all.back().t_unix;
}

std::string CaptureStore::new_stamp(double t_unix) const {
    const std::string base = capture_stamp(t_unix);
    std::error_code ec;
    std::string stamp = base;
    for (int n = 2; fs::exists(bundle_path(stamp), ec) || fs::exists(record_path(stamp), ec); ++n)
        stamp = base + "-" + std::to_string(n);
    return stamp;
}

std::vector<std::string> CaptureStore::prune(std::size_t keep, std::uintmax_t max_bytes) const {
    auto all = list();
    std::uintmax_t total = 0;
    for (const auto& c : all) total += c.bytes;
    std::vector<std::string> deleted;
    keep = std::max<std::size_t>(keep, 1);
    size_t i = 0;
    while (all.size() - i > 1 && (all.size() - i > keep || total > max_bytes)) {
        for (const auto& f : all[i].files) {
            std::error_code ec;
            if (fs::remove(f, ec)) deleted.push_back(f);
        }
        total -= all[i].bytes;
        ++i;
    }
    return deleted;
}

}  // namespace iodiag::cli
