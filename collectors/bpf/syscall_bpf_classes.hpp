// The classes a traced syscall's time is charged to (bpf/syscall_events.h),
// their layer names (engine/evidence/layers.hpp, plus "other"), the syscall and op
// names, and the kernel functions that classify an off-CPU wait.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace iodiag::syscall_bpf {

// Index = enum iod_class. The layer name each class reports as.
const std::vector<std::string>& class_layers();
// Index = enum iod_sys.
const std::vector<std::string>& syscall_names();
// Index = enum iod_group: the "op" label (read, write, fsync, sync_file_range, open, io_uring_enter).
const std::vector<std::string>& group_names();
// Group index of a syscall index.
int group_of_syscall(int sys);

// Kernel function -> wait class. An off-CPU wait is charged to the class of the
// innermost stack frame that lies in one of these functions; generic helpers
// (folio_wait_bit_common, io_schedule) are deliberately absent so that their
// caller decides (a folio wait under filemap_read is a page-cache miss, under
// folio_wait_writeback it is write I/O).
const std::map<std::string, int>& wait_classifier_functions();

// enum iod_journal_kind of a journal-class function of that table (jbd2, XFS
// log, btrfs log tree); 0 for every other function.
unsigned journal_kind_of_function(const std::string& name);

}  // namespace iodiag::syscall_bpf
