#pragma once
#include <string>

namespace iodiag {

// Writes `content` to `path` so that a reader sees either the old file or the
// whole new one, also after a crash or power loss: a temporary file in the
// same directory, fsync'd, renamed over `path`, then the directory fsync'd so
// the rename itself is durable. Throws std::runtime_error naming the path and
// the system's reason; the temporary file never stays behind.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace iodiag
