#include "engine/render/report_markup.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/evidence/format.hpp"

namespace iodiag {

namespace {

const char* const kReplacement = "\xEF\xBF\xBD";   // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0.
size_t utf8_length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    // Overlong, surrogates, beyond U+10FFFF, and the XML non-characters.
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF) ||
        cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    return n;
}

}  // namespace

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 16);
    for (size_t i = 0; i < s.size();) {
        const char c = s[i];
        switch (c) {
            case '&': out += "&amp;"; ++i; continue;
            case '<': out += "&lt;"; ++i; continue;
            case '>': out += "&gt;"; ++i; continue;
            case '"': out += "&quot;"; ++i; continue;
            case '\'': out += "&#39;"; ++i; continue;
            default: break;
        }
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            out += kReplacement;
            ++i;
            continue;
        }
        const size_t n = utf8_length(s, i);
        if (n == 0) {
            out += kReplacement;
            ++i;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    return out;
}

std::string svg_number(double v) {
    if (!std::isfinite(v)) return "0";
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s = buf;
    // snprintf follows LC_NUMERIC; SVG wants '.'.
    for (auto& ch : s)
        if (ch == ',') ch = '.';
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

std::string labels_suffix(const Labels& labels) {
    if (labels.empty()) return "";
    std::string s = "{";
    for (const auto& [k, v] : labels) s += (s.size() > 1 ? "," : "") + k + "=" + v;
    return s + "}";
}

std::string format_amount(double v, const std::string& unit) {
    if (unit == "us" || unit == "ns" || unit == "ms") {
        const double us = unit == "ns" ? v / 1000 : unit == "ms" ? v * 1000 : v;
        if (v == 0) return "0";
        if (std::fabs(us) < 1) return format_number(us * 1000) + " ns";
        if (std::fabs(us) < 1000) return format_number(us) + " us";
        if (std::fabs(us) < 1e6) return format_number(us / 1000) + " ms";
        return format_number(us / 1e6) + " s";
    }
    return format_value(v, unit);
}

std::string format_bound(std::uint64_t value, const std::string& unit) {
    return format_amount(static_cast<double>(value), unit);
}

std::string format_seconds(double s) { return format_number(s) + " s"; }

double nice_step(double span, int max_ticks, double min_step) {
    if (span <= 0 || max_ticks < 1) return std::max(min_step, 1.0);
    const double raw = span / max_ticks;
    double step = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0}) {
        if (step * m >= raw) {
            step *= m;
            break;
        }
    }
    return std::max(step, min_step);
}

std::string svg_time_axis(double left, double plot_w, double y, double px_per_s, double span_s, double min_step_s,
                          const std::string& title) {
    const auto n = svg_number;
    const double step = nice_step(span_s, std::max(2, static_cast<int>(plot_w / 70)), min_step_s);
    std::ostringstream o;
    o << "<g class=\"x-axis\" text-anchor=\"middle\">\n";
    for (double t = 0; t <= span_s + 1e-9; t += step) {
        const double x = left + t * px_per_s;
        if (x > left + plot_w + 0.5) break;
        o << "<line x1=\"" << n(x) << "\" y1=\"" << n(y) << "\" x2=\"" << n(x) << "\" y2=\"" << n(y + 4)
          << "\" stroke=\"#888\"/><text x=\"" << n(x) << "\" y=\"" << n(y + 16) << "\">" << xml_escape(format_seconds(t))
          << "</text>\n";
    }
    o << "</g>\n<text x=\"" << n(left + plot_w / 2) << "\" y=\"" << n(y + 34) << "\" text-anchor=\"middle\">"
      << xml_escape(title) << "</text>\n";
    return o.str();
}

}  // namespace iodiag
