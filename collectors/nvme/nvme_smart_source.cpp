#include "collectors/nvme/nvme_smart_source.hpp"

#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "collectors/nvme/nvme_smart_log.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::nvme {

namespace {

constexpr uint8_t kOpcodeGetLogPage = 0x02;
constexpr uint8_t kOpcodeIdentify = 0x06;
constexpr uint32_t kAllNamespaces = 0xFFFFFFFFu;
constexpr uint32_t kCnsController = 0x01;

class IoctlAdminSource : public AdminSource {
public:
    explicit IoctlAdminSource(std::string dev_dir) : dev_dir_(std::move(dev_dir)) {}

    std::vector<uint8_t> smart_log(const std::string& controller) override {
        std::vector<uint8_t> buf(kSmartLogSize, 0);
        nvme_admin_cmd cmd{};
        cmd.opcode = kOpcodeGetLogPage;
        cmd.nsid = kAllNamespaces;
        cmd.addr = reinterpret_cast<uintptr_t>(buf.data());
        cmd.data_len = static_cast<uint32_t>(buf.size());
        // CDW10: NUMDL (dwords - 1) in bits 31:16, log page id in bits 7:0.
        const uint32_t numd = static_cast<uint32_t>(buf.size() / 4 - 1);
        cmd.cdw10 = ((numd & 0xFFFF) << 16) | kSmartLogId;
        cmd.cdw11 = numd >> 16;   // NUMDU
        submit(controller, cmd, "Get Log Page 02h");
        return buf;
    }

    std::vector<uint8_t> identify_controller(const std::string& controller) override {
        std::vector<uint8_t> buf(kIdentifySize, 0);
        nvme_admin_cmd cmd{};
        cmd.opcode = kOpcodeIdentify;
        cmd.addr = reinterpret_cast<uintptr_t>(buf.data());
        cmd.data_len = static_cast<uint32_t>(buf.size());
        cmd.cdw10 = kCnsController;
        submit(controller, cmd, "Identify Controller");
        return buf;
    }

    std::string describe(const std::string& controller, const std::string& what) const override {
        return "ioctl NVME_IOCTL_ADMIN_CMD " + what + " on " + dev_dir_ + "/" + controller;
    }

private:
    void submit(const std::string& controller, nvme_admin_cmd& cmd, const std::string& what) {
        const std::string path = dev_dir_ + "/" + controller;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw SourceError(path + ": " + std::strerror(errno));
        const int rc = ::ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
        const int saved = errno;
        ::close(fd);
        if (rc < 0) throw SourceError(path + ": " + what + ": " + std::strerror(saved));
        // A positive return is the NVMe status field: the controller refused.
        if (rc > 0)
            throw SourceError(path + ": " + what + ": NVMe status 0x" + [rc] {
                char b[16];
                std::snprintf(b, sizeof b, "%x", rc);
                return std::string(b);
            }());
    }

    std::string dev_dir_;
};

class FileAdminSource : public AdminSource {
public:
    explicit FileAdminSource(std::string dir) : dir_(std::move(dir)) {}
    std::vector<uint8_t> smart_log(const std::string& controller) override {
        return read_all(dir_ + "/" + controller + ".smart.bin");
    }
    std::vector<uint8_t> identify_controller(const std::string& controller) override {
        return read_all(dir_ + "/" + controller + ".identify.bin");
    }
    std::string describe(const std::string& controller, const std::string& what) const override {
        return "file " + dir_ + "/" + controller + (what == "Identify Controller"
                                                        ? ".identify.bin"
                                                        : ".smart.bin");
    }

private:
    static std::vector<uint8_t> read_all(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw SourceError(path + ": " + std::strerror(errno));
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    std::string dir_;
};

}  // namespace

std::unique_ptr<AdminSource> make_ioctl_admin_source(const std::string& dev_dir) {
    return std::make_unique<IoctlAdminSource>(dev_dir);
}

std::unique_ptr<AdminSource> make_file_admin_source(const std::string& dir) {
    return std::make_unique<FileAdminSource>(dir);
}

}  // namespace iodiag::nvme
