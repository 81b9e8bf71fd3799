// Decoder for the NVMe SMART / Health Information log page (Get Log Page,
// log identifier 02h, 512 bytes; NVM Express Base Specification 2.0, 5.16.1.3)
// and for the two thermal thresholds of Identify Controller (WCTEMP, CCTEMP).
//
// Field names follow nvme-cli's JSON output (`nvme smart-log -o json`) so that
// people can compare iodiag's evidence with what they already know.
//
// The 128-bit little-endian counters are kept exact (unsigned __int128 and a
// decimal string); a double is produced only where a rule needs to compare.
// A buffer that is too short or cannot be a SMART page (reserved bits set,
// percentages above 100, an impossible temperature) is rejected with a
// SmartDecodeError that says which byte was wrong: never a wrong number.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace iodiag::nvme {

using u128 = unsigned __int128;

inline constexpr std::size_t kSmartLogSize = 512;
inline constexpr uint8_t kSmartLogId = 0x02;
inline constexpr std::size_t kIdentifySize = 4096;

struct SmartDecodeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Critical Warning bits (byte 0).
struct CriticalWarningBit {
    int bit;
    const char* name;          // stable identifier
    const char* description;   // what the controller is telling
};
const std::vector<CriticalWarningBit>& critical_warning_bits();
// Names of the bits set in `value`, comma separated ("" when none).
std::string critical_warning_names(uint8_t value);

struct SmartLog {
    uint8_t critical_warning = 0;
    uint16_t temperature_k = 0;                 // composite temperature, Kelvin
    uint8_t avail_spare = 0;                    // percent (0..100)
    uint8_t spare_thresh = 0;                   // percent (0..100)
    uint8_t percent_used = 0;                   // percent, may exceed 100 (max 255)
    uint8_t endurance_grp_critical_warning_summary = 0;
    u128 data_units_read = 0;                   // units of 1000 x 512 bytes
    u128 data_units_written = 0;
    u128 host_read_commands = 0;
    u128 host_write_commands = 0;
    u128 controller_busy_time = 0;              // minutes
    u128 power_cycles = 0;
    u128 power_on_hours = 0;
    u128 unsafe_shutdowns = 0;
    u128 media_errors = 0;
    u128 num_err_log_entries = 0;
    uint32_t warning_temp_time = 0;             // minutes above WCTEMP
    uint32_t critical_comp_time = 0;            // minutes above CCTEMP
    std::array<uint16_t, 8> temperature_sensor_k{};   // 0 = sensor not implemented
    uint32_t thm_temp1_trans_count = 0;
    uint32_t thm_temp2_trans_count = 0;
    uint32_t thm_temp1_total_time = 0;          // seconds
    uint32_t thm_temp2_total_time = 0;          // seconds

    // The spec converts with Kelvin = Celsius + 273 (integers), as nvme-cli does.
    double temperature_c() const { return static_cast<double>(temperature_k) - 273.0; }
};

// One 128-bit counter by its nvme-cli name, for iteration.
struct SmartCounter {
    const char* name;
    u128 SmartLog::*field;
    const char* unit;
    const char* description;
};
const std::vector<SmartCounter>& smart_counters();

// Decodes a raw page. Throws SmartDecodeError naming `where` (e.g. the device).
SmartLog decode_smart_log(const uint8_t* data, std::size_t size, const std::string& where);
inline SmartLog decode_smart_log(const std::vector<uint8_t>& raw, const std::string& where) {
    return decode_smart_log(raw.data(), raw.size(), where);
}

// Exact decimal form of a 128-bit counter.
std::string to_decimal(u128 v);
// Nearest double (exact below 2^53).
double to_double(u128 v);
// Bytes of `units` data units (1000 x 512 bytes each), saturating at 2^128 - 1.
u128 data_units_to_bytes(u128 units);

// Thermal thresholds from Identify Controller (bytes 266-269), Kelvin; nullopt
// when the controller reports 0 (not implemented).
struct ThermalThresholds {
    std::optional<uint16_t> warning_k;    // WCTEMP
    std::optional<uint16_t> critical_k;   // CCTEMP
};
ThermalThresholds decode_identify_thresholds(const uint8_t* data, std::size_t size,
                                             const std::string& where);

}  // namespace iodiag::nvme
