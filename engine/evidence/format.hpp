// Number formatting shared by the renderers and the layer table.
#pragma once

#include <string>

namespace iodiag {

// "12.3 ms", "98 %", "1.2 GiB": a value with its unit, 3 significant digits.
std::string format_value(double value, const std::string& unit);
// "2026-11-29 23:59:01 UTC" from seconds since the epoch.
std::string format_utc(double unix_s);
// The same time in another strftime format, e.g. "%Y%m%dT%H%M%SZ" for file names.
std::string format_utc(double unix_s, const char* strftime_format);
// Plain number with up to 3 significant digits ("0.123", "12.3", "1234").
std::string format_number(double value);

}  // namespace iodiag
