// Number and word formatting shared by the renderers and the layer table.
#pragma once

#include <string>

namespace iodiag {

// "12.3 ms", "98 %", "1.2 GiB": a value with its unit, 3 significant digits.
std::string format_value(double value, const std::string& unit);
// "2026-11-29 23:59:01 UTC" from seconds since the epoch.
std::string format_utc(double unix_s);
// "20261129T235901Z" (ISO 8601 basic format): for file names that sort by time.
std::string format_utc_stamp(double unix_s);
// Plain number with up to 3 significant digits ("0.123", "12.3", "1234").
std::string format_number(double value);
// "WARNING" from "warning": a status or severity word as the outputs show it (ASCII).
std::string upper_case(std::string word);

}  // namespace iodiag
