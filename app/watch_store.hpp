// The directory where `iodiag watch` keeps its captures, two files each:
//   watch-YYYYmmddTHHMMSSZ.bundle.json  the evidence (iodiag replay reads it)
//   watch-YYYYmmddTHHMMSSZ.json         the trigger, the seconds before it, the verdict
// Only files named this way are ever listed or deleted: the directory may
// hold anything else (check's history, an operator's notes) and it stays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace iodiag::cli {

struct StoredCapture {
    std::string stamp;                // "watch-20250101T020304Z" (or with a "-2" suffix)
    double t_unix = 0;                // from the stamp
    std::vector<std::string> files;   // full paths of its files (and leftover temporaries)
    std::uintmax_t bytes = 0;
};

class CaptureStore {
public:
    explicit CaptureStore(std::string dir) : dir_(std::move(dir)) {}
    const std::string& dir() const { return dir_; }

    // Creates the directory when missing (not its parents' permissions beyond
    // the default) and checks it is writable. Throws std::runtime_error naming it.
    void prepare() const;

    // Own captures, oldest first.
    std::vector<StoredCapture> list() const;
    std::optional<double> last_capture_unix() const;

    // A stamp for a capture at t_unix that no stored capture has.
    std::string new_stamp(double t_unix) const;
    std::string bundle_path(const std::string& stamp) const { return dir_ + "/" + stamp + ".bundle.json"; }
    std::string record_path(const std::string& stamp) const { return dir_ + "/" + stamp + ".json"; }

    // Deletes the oldest captures until at most `keep` remain and they hold at
    // most `max_bytes` together; the newest capture is always kept. Returns
    // the deleted files.
    std::vector<std::string> prune(std::size_t keep, std::uintmax_t max_bytes) const;

private:
    std::string dir_;
};

// "watch-20250101T020304Z" <-> Unix time (UTC). nullopt for anything else.
std::string capture_stamp(double t_unix);
std::optional<double> parse_capture_stamp(const std::string& stamp);

}  // namespace iodiag::cli
