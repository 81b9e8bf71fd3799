// Where raw NVMe admin data comes from. The real source issues Get Log Page and
// Identify through NVME_IOCTL_ADMIN_CMD on /dev/nvmeX; tests use a directory of
// raw pages instead, so the decoder and the collector run without a device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace iodiag::nvme {

class AdminSource {
public:
    virtual ~AdminSource() = default;
    // The SMART / Health log page (512 bytes) of a controller ("nvme0"), for the
    // whole controller (nsid 0xFFFFFFFF). Throws SourceError naming the device.
    virtual std::vector<uint8_t> smart_log(const std::string& controller) = 0;
    // Identify Controller data (4096 bytes). Throws SourceError.
    virtual std::vector<uint8_t> identify_controller(const std::string& controller) = 0;
    // For provenance: how the bytes were obtained, e.g. "ioctl NVME_IOCTL_ADMIN_CMD
    // Get Log Page 02h on /dev/nvme0".
    virtual std::string describe(const std::string& controller, const std::string& what) const = 0;
};

// Issues admin commands on <dev_dir>/<controller> (normally /dev/nvme0).
std::unique_ptr<AdminSource> make_ioctl_admin_source(const std::string& dev_dir = "/dev");

// Reads <dir>/<controller>.smart.bin and <dir>/<controller>.identify.bin.
std::unique_ptr<AdminSource> make_file_admin_source(const std::string& dir);

}  // namespace iodiag::nvme
