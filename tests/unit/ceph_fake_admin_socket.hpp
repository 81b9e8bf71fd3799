// A fake Ceph admin socket for the collector tests: a unix socket server in a
// thread that answers each command (one per connection, as the OSD does) from
// a table, or misbehaves on purpose (hang, close, truncate, absurd length).
#pragma once

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace iodiag::testing {

class FakeAdminSocket {
public:
    enum class Mode { Answer, Hang, CloseAtOnce, Truncate, HugeLength };
    // replies: command prefix ("perf dump") -> reply body. An unknown prefix
    // gets Ceph's own answer to one: an error text.
    FakeAdminSocket(std::string path, std::map<std::string, std::string> replies, Mode mode = Mode::Answer)
        : path_(std::move(path)), replies_(std::move(replies)), mode_(mode) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
        ::unlink(path_.c_str());
        ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::listen(fd_, 16);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeAdminSocket() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    void set_reply(const std::string& prefix, const std::string& body) {
        std::lock_guard<std::mutex> l(mu_);
        replies_[prefix] = body;
    }
    int commands() const { return commands_; }

private:
    void serve() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            handle(c);
            ::close(c);
        }
    }
    void handle(int c) {
        std::string cmd;
        char ch;
        while (::read(c, &ch, 1) == 1 && ch != '\0') cmd += ch;
        ++commands_;
        if (mode_ == Mode::CloseAtOnce) return;
        if (mode_ == Mode::Hang) {
            while (!stop_) ::usleep(20000);
            return;
        }
        std::string body = "no valid command found";
        {
            std::lock_guard<std::mutex> l(mu_);
            for (const auto& [prefix, reply] : replies_)
                if (cmd.find("\"" + prefix + "\"") != std::string::npos) body = reply;
        }
        uint32_t len = static_cast<uint32_t>(body.size());
        if (mode_ == Mode::HugeLength) len = 0xfffffff0u;
        const unsigned char be[4] = {static_cast<unsigned char>(len >> 24), static_cast<unsigned char>(len >> 16),
                                     static_cast<unsigned char>(len >> 8), static_cast<unsigned char>(len)};
        (void)!::send(c, be, 4, MSG_NOSIGNAL);
        const size_t n = mode_ == Mode::Truncate ? body.size() / 2 : body.size();
        size_t off = 0;
        while (off < n) {
            const ssize_t w = ::send(c, body.data() + off, n - off, MSG_NOSIGNAL);
            if (w <= 0) break;
            off += static_cast<size_t>(w);
        }
    }

    std::string path_;
    std::map<std::string, std::string> replies_;
    Mode mode_;
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::atomic<int> commands_{0};
    std::mutex mu_;
    std::thread thread_;
};

}  // namespace iodiag::testing
