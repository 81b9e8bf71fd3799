// Fields of a /proc/<pid>/stat line (proc(5)), shared by the collectors that
// read one. The command name (field 2) may hold spaces and parentheses, so
// the other fields are counted after the last ')'.
#pragma once

#include <cstdint>
#include <string>

namespace iodiag {

// Field `field` (1-based, as proc(5) numbers them; 3 or more) as a number;
// `what` names it in the error. Throws SourceError (with `where`) when the
// line has no ')' or too few fields, or the field is not a number.
uint64_t parse_stat_field(const std::string& stat_line, int field, const std::string& what, const std::string& where);

// Whether the line's flags (field 9) have PF_KTHREAD: a kernel thread, which
// does I/O on behalf of others (a loop device's worker, the flusher). False
// for a line that is not one.
bool stat_says_kernel_thread(const std::string& stat_line);

}  // namespace iodiag
