// Reading small kernel text files (procfs, sysfs, cgroupfs) with errors that
// name the path, for collectors and their fixture tests.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace iodiag {

// Thrown for unreadable or malformed input; what() always names the path.
struct SourceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The largest file read_text_file() accepts: /proc/kallsyms, the largest file
// read, is ~10 MiB on big distribution kernels.
inline constexpr size_t kMaxKernelTextBytes = size_t{64} << 20;
// Whole file; throws SourceError("<path>: <strerror>") if it cannot be read,
// or is larger than kMaxKernelTextBytes.
std::string read_text_file(const std::string& path);
// Whole file, or nullopt if it does not exist or cannot be read.
std::optional<std::string> try_read_text_file(const std::string& path);
// First line without the newline, trimmed; nullopt when unreadable.
std::optional<std::string> try_read_first_line(const std::string& path);
// Joins a root prefix ("/" or a fixture tree) with an absolute path.
std::string under_root(const std::string& root, const std::string& abs_path);
// Calls fn(fields, line, where) for every non-blank line of text: its
// whitespace-split fields, the line itself, and "path:N" for error messages.
using LineVisitor =
    std::function<void(const std::vector<std::string>& fields, const std::string& line, const std::string& where)>;
void for_each_line(const std::string& text, const std::string& path, const LineVisitor& fn);
// Splits on runs of whitespace.
std::vector<std::string> split_ws(const std::string& line);
// Parses an unsigned/signed integer or throws SourceError("<where>: ...").
unsigned long long parse_u64(const std::string& s, const std::string& where);
long long parse_i64(const std::string& s, const std::string& where);

}  // namespace iodiag
