#include "engine/evidence/atomic_file.hpp"
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace iodiag {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
    throw std::runtime_error("cannot " + what + " " + path + ": " + std::strerror(err));
}

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

void write_all(int fd, const std::string& content, const std::string& tmp) {
    const char* p = content.data();
    size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("write", tmp, errno);
        p += n;
        left -= static_cast<size_t>(n);
    }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("write", tmp, errno);
    try {
        write_all(fd, content, tmp);
        // Without this the rename can reach the disk before the data does, and
        // a crash leaves an empty file under the final name.
        if (::fsync(fd) != 0) fail("fsync", tmp, errno);
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail("close", tmp, err);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
    }
    // The rename lives in the directory: sync it too. A directory that cannot
    // be opened for reading (unusual permissions) leaves the file written,
    // only less durable, so that is not an error.
    const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

}  // namespace iodiag
