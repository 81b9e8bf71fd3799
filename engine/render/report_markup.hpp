// Markup helpers shared by the SVG heatmaps and the HTML report. Everything a
// bundle carries (host names, comm names, file paths, labels, even rule text)
// comes from strangers: it goes through xml_escape before it reaches markup.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// Safe in XML/HTML text and in double- or single-quoted attributes: & < > " '
// escaped; characters XML 1.0 does not allow even escaped (C0 controls other
// than tab, newline, carriage return; U+FFFE, U+FFFF) and bytes that are not
// UTF-8 become U+FFFD, so every SVG stays well-formed XML.
std::string xml_escape(std::string_view s);

// A coordinate or length for SVG attributes: at most two decimals, no
// exponent, "." as the decimal point whatever the locale.
std::string svg_number(double v);

// "{device=vda,op=write}", "" for no labels (not escaped).
std::string labels_suffix(const Labels& labels);

// A log2 bucket bound in human units: "0", "512 us", "1 ms", "2 s" for unit
// "us"; "4 KiB" for "bytes"; the number and the unit otherwise.
std::string format_bound(std::uint64_t value, const std::string& unit);

// A value in human units: times in ns/us/ms become "870 us", "12.3 ms",
// "1.2 s"; other units as format_value does.
std::string format_amount(double value, const std::string& unit);

// Seconds as an axis label: "0 s", "90 s", "2.5 s".
std::string format_seconds(double s);

// A step for axis ticks over `span` giving at most `max_ticks` ticks, from
// 1-2-5 × 10^k (at least `min_step`).
double nice_step(double span, int max_ticks, double min_step = 0);

// The time axis under a chart of the window: a tick and label every 1-2-5
// step of seconds (at least `min_step_s` apart, ~70 px or more between
// labels), at x = left + t × px_per_s from t = 0 to `span_s`, below the
// plot's bottom edge `y`, and `title` under them.
std::string svg_time_axis(double left, double plot_w, double y, double px_per_s, double span_s, double min_step_s,
                          const std::string& title);

}  // namespace iodiag
