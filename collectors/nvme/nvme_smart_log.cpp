#include "collectors/nvme/nvme_smart_log.hpp"

#include <algorithm>

namespace iodiag::nvme {

namespace {

// Byte offsets of the SMART / Health Information log (NVMe Base Spec 2.0).
constexpr std::size_t kOffCriticalWarning = 0;
constexpr std::size_t kOffTemperature = 1;
constexpr std::size_t kOffAvailSpare = 3;
constexpr std::size_t kOffSpareThresh = 4;
constexpr std::size_t kOffPercentUsed = 5;
constexpr std::size_t kOffEnduranceGroupSummary = 6;
constexpr std::size_t kOffReserved1 = 7;        // 7..31 reserved
constexpr std::size_t kOffDataUnitsRead = 32;   // then 16-byte counters up to 191
constexpr std::size_t kOffWarningTempTime = 192;
constexpr std::size_t kOffCriticalTempTime = 196;
constexpr std::size_t kOffTempSensors = 200;    // 8 x 2 bytes
constexpr std::size_t kOffThm1TransCount = 216;
constexpr std::size_t kOffThm2TransCount = 220;
constexpr std::size_t kOffThm1TotalTime = 224;
constexpr std::size_t kOffThm2TotalTime = 228;
constexpr std::size_t kOffReserved2 = 232;      // 232..511 reserved

// Bits 6 and 7 of Critical Warning are reserved.
constexpr uint8_t kReservedWarningBits = 0xC0;
// Endurance Group Critical Warning Summary defines bits 0, 2 and 3.
constexpr uint8_t kReservedEnduranceBits = 0xF2;

// A composite temperature a controller can report and still run: the spec's
// field is Kelvin; 0 means "not reported", which a SMART page must not say
// for the composite. Anything outside -100..+200 °C is not a temperature.
constexpr uint16_t kMinPlausibleK = 173;
constexpr uint16_t kMaxPlausibleK = 473;

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
u128 le128(const uint8_t* p) {
    u128 v = 0;
    for (int i = 15; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

std::string hex_byte(uint8_t b) {
    static const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[b >> 4] + digits[b & 0xF];
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    throw SmartDecodeError(where + ": not a valid NVMe SMART / Health log page: " + what);
}

void check_reserved_zero(const uint8_t* data, std::size_t from, std::size_t to,
                         const std::string& where) {
    for (std::size_t i = from; i < to; ++i)
        if (data[i] != 0)
            fail(where, "reserved byte " + std::to_string(i) + " is " + hex_byte(data[i]) +
                            " (must be 0)");
}

}  // namespace

const std::vector<CriticalWarningBit>& critical_warning_bits() {
    static const std::vector<CriticalWarningBit> bits{
        {0, "available_spare", "available spare capacity fell below the threshold"},
        {1, "temperature", "a temperature is above the over-temperature or below the "
                           "under-temperature threshold"},
        {2, "reliability_degraded", "NVM subsystem reliability is degraded (media or "
                                    "internal errors)"},
        {3, "read_only", "media has been placed in read-only mode"},
        {4, "volatile_backup_failed", "volatile memory backup device has failed"},
        {5, "pmr_read_only", "persistent memory region became read-only or unreliable"},
    };
    return bits;
}

std::string critical_warning_names(uint8_t value) {
    std::string out;
    for (const auto& b : critical_warning_bits()) {
        if (!(value & (1u << b.bit))) continue;
        if (!out.empty()) out += ",";
        out += b.name;
    }
    return out;
}

const std::vector<SmartCounter>& smart_counters() {
    static const std::vector<SmartCounter> counters{
        {"data_units_read", &SmartLog::data_units_read, "data units",
         "data read by the host, in units of 1000 x 512 bytes"},
        {"data_units_written", &SmartLog::data_units_written, "data units",
         "data written by the host, in units of 1000 x 512 bytes"},
        {"host_read_commands", &SmartLog::host_read_commands, "count", "read commands completed"},
        {"host_write_commands", &SmartLog::host_write_commands, "count",
         "write commands completed"},
        {"controller_busy_time", &SmartLog::controller_busy_time, "min",
         "minutes the controller had I/O outstanding"},
        {"power_cycles", &SmartLog::power_cycles, "count", "power cycles"},
        {"power_on_hours", &SmartLog::power_on_hours, "h", "power-on hours"},
        {"unsafe_shutdowns", &SmartLog::unsafe_shutdowns, "count",
         "shutdowns without a shutdown notification (power loss)"},
        {"media_errors", &SmartLog::media_errors, "count",
         "unrecovered data integrity errors (media and data integrity errors)"},
        {"num_err_log_entries", &SmartLog::num_err_log_entries, "count",
         "entries in the controller's error information log over its life"},
    };
    return counters;
}

SmartLog decode_smart_log(const uint8_t* data, std::size_t size, const std::string& where) {
    if (data == nullptr || size < kSmartLogSize)
        fail(where, "truncated: " + std::to_string(data ? size : 0) + " bytes, need " +
                        std::to_string(kSmartLogSize));

    SmartLog log;
    log.critical_warning = data[kOffCriticalWarning];
    if (log.critical_warning & kReservedWarningBits)
        fail(where, "critical_warning " + hex_byte(log.critical_warning) +
                        " has reserved bits 6-7 set");
    log.temperature_k = le16(data + kOffTemperature);
    if (log.temperature_k < kMinPlausibleK || log.temperature_k > kMaxPlausibleK)
        fail(where, "composite temperature " + std::to_string(log.temperature_k) +
                        " K is outside " + std::to_string(kMinPlausibleK) + ".." +
                        std::to_string(kMaxPlausibleK) + " K");
    log.avail_spare = data[kOffAvailSpare];
    if (log.avail_spare > 100)
        fail(where, "avail_spare " + std::to_string(log.avail_spare) + " % exceeds 100 %");
    log.spare_thresh = data[kOffSpareThresh];
    if (log.spare_thresh > 100)
        fail(where, "spare_thresh " + std::to_string(log.spare_thresh) + " % exceeds 100 %");
    log.percent_used = data[kOffPercentUsed];   // 255 means "255 or more": legal
    log.endurance_grp_critical_warning_summary = data[kOffEnduranceGroupSummary];
    if (log.endurance_grp_critical_warning_summary & kReservedEnduranceBits)
        fail(where, "endurance group critical warning summary " +
                        hex_byte(log.endurance_grp_critical_warning_summary) +
                        " has reserved bits set");
    check_reserved_zero(data, kOffReserved1, kOffDataUnitsRead, where);

    std::size_t off = kOffDataUnitsRead;
    for (const auto& c : smart_counters()) {
        log.*(c.field) = le128(data + off);
        off += 16;
    }
    log.warning_temp_time = le32(data + kOffWarningTempTime);
    log.critical_comp_time = le32(data + kOffCriticalTempTime);
    for (std::size_t i = 0; i < log.temperature_sensor_k.size(); ++i) {
        uint16_t k = le16(data + kOffTempSensors + 2 * i);
        if (k != 0 && (k < kMinPlausibleK || k > kMaxPlausibleK))
            fail(where, "temperature_sensor_" + std::to_string(i + 1) + " " +
                            std::to_string(k) + " K is outside " +
                            std::to_string(kMinPlausibleK) + ".." +
                            std::to_string(kMaxPlausibleK) + " K");
        log.temperature_sensor_k[i] = k;
    }
    log.thm_temp1_trans_count = le32(data + kOffThm1TransCount);
    log.thm_temp2_trans_count = le32(data + kOffThm2TransCount);
    log.thm_temp1_total_time = le32(data + kOffThm1TotalTime);
    log.thm_temp2_total_time = le32(data + kOffThm2TotalTime);
    check_reserved_zero(data, kOffReserved2, kSmartLogSize, where);
    return log;
}

std::string to_decimal(u128 v) {
    if (v == 0) return "0";
    std::string s;
    while (v != 0) {
        s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
        v /= 10;
    }
    std::reverse(s.begin(), s.end());
    return s;
}

double to_double(u128 v) {
    const uint64_t hi = static_cast<uint64_t>(v >> 64);
    const uint64_t lo = static_cast<uint64_t>(v);
    return static_cast<double>(hi) * 18446744073709551616.0 + static_cast<double>(lo);
}

u128 data_units_to_bytes(u128 units) {
    constexpr u128 kUnit = 512000;
    const u128 max = ~static_cast<u128>(0);
    if (units > max / kUnit) return max;
    return units * kUnit;
}

ThermalThresholds decode_identify_thresholds(const uint8_t* data, std::size_t size,
                                             const std::string& where) {
    // Identify Controller: WCTEMP at bytes 266-267, CCTEMP at 268-269 (Kelvin).
    constexpr std::size_t kOffWctemp = 266;
    constexpr std::size_t kOffCctemp = 268;
    if (data == nullptr || size < kOffCctemp + 2)
        throw SmartDecodeError(where + ": Identify Controller data truncated: " +
                               std::to_string(data ? size : 0) + " bytes, need at least " +
                               std::to_string(kOffCctemp + 2));
    ThermalThresholds t;
    auto plausible = [](uint16_t k) { return k >= kMinPlausibleK && k <= kMaxPlausibleK; };
    const uint16_t w = le16(data + kOffWctemp);
    const uint16_t c = le16(data + kOffCctemp);
    if (w != 0 && plausible(w)) t.warning_k = w;
    if (c != 0 && plausible(c)) t.critical_k = c;
    return t;
}

}  // namespace iodiag::nvme
