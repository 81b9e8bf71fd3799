#!/usr/bin/python3
# A FUSE filesystem that passes reads and writes through to files in a backing
# directory and delays them with a device model, so a loop device over one of
# its files behaves like a storage device the kernel cannot see into (a
# virtual disk over slow host storage, or a disk that seeks). Lab use only.
#
#   slowfs.py BACKDIR MOUNTPOINT MODEL
#
# MODEL:
#   fixed:MS      every request takes MS milliseconds, requests served in
#                 parallel (a slow or capped backend behind a virtual disk)
#   stall:PCT:MS  requests pass through (the FUSE round trip, a fraction of a
#                 millisecond: flash-like); each starts a stall of the whole
#                 device with probability PCT %, and every request that arrives
#                 during a stall waits for its end (MS milliseconds after it
#                 began): a device that stops serving now and then (an SSD's
#                 garbage collection, a volume's burst cap)
#   hdd           one request at a time (one head); each pays a seek that grows
#                 with the distance from the previous request (~0.5 ms
#                 track-to-track up to ~8 ms full stroke over the file) plus
#                 half a rotation at 7200 rpm (4.2 ms): a 4 KiB random request
#                 takes ~8-12 ms at QD 1, and a deeper queue raises latency, not
#                 throughput (seed 004 §2)
#   discard:MS    reads and writes pass through; every hole punched in a file
#                 (a loop device's discard, fallocate PUNCH_HOLE) takes MS
#                 milliseconds, one at a time: a thin volume or an SSD whose
#                 unmap/trim is slow
#   cap:MBPS      a volume with a throughput cap (a cloud disk's MB/s limit):
#                 one queue served in arrival order, each request taking
#                 0.1 ms plus its size at MBPS megabytes a second. Alone, a
#                 4 KiB read is fast; behind a bulk job's large requests it
#                 waits for them (the cap is what they share)
#
# Files are opened with FUSE's direct_io, so the kernel's page cache of the
# FUSE file never answers a request: every loop-device request reaches the model.
import ctypes
import errno
import os
import random
import sys
import threading
import time

import fusepy
from fusepy import FUSE, FuseOSError, Operations


class SlowFs(Operations):
    def __init__(self, root, model):
        self.root = root
        self.head_lock = threading.Lock()
        self.head = 0
        self.model = model
        self.stalled_until = 0.0
        if model.startswith("fixed:"):
            self.fixed_s = float(model.split(":", 1)[1]) / 1000.0
        elif model.startswith("stall:"):
            _, pct, ms = model.split(":")
            self.stall_p, self.stall_s = float(pct) / 100.0, float(ms) / 1000.0
        elif model.startswith("cap:"):
            self.cap_bps = float(model.split(":", 1)[1]) * 1e6
            self.next_free = 0.0   # when the queue's last request will be done
        elif model.startswith("discard:"):
            self.discard_s = float(model.split(":", 1)[1]) / 1000.0
        elif model != "hdd":
            raise SystemExit(f"unknown model {model}")

    def _path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _delay(self, fh, offset, size):
        if self.model.startswith("discard:"):
            return
        if self.model == "hdd":
            span = max(os.fstat(fh).st_size, 1)
            with self.head_lock:   # one head: requests are served one at a time
                distance = abs(offset - self.head) / span
                seek = 0.0 if distance == 0 else 0.0005 + 0.0075 * distance ** 0.5
                time.sleep(seek + 0.0042 + size / 150e6)
                self.head = offset + size
        elif self.model.startswith("stall:"):
            with self.head_lock:
                now = time.monotonic()
                if now >= self.stalled_until and random.random() < self.stall_p:
                    self.stalled_until = now + self.stall_s
                wait = self.stalled_until - now
            if wait > 0:
                time.sleep(wait)
        elif self.model.startswith("cap:"):
            # A place in the queue is taken on arrival (first come, first
            # served); the request is done when everything before it is and
            # its own transfer has passed. No lock is held while waiting.
            with self.head_lock:
                start = max(time.monotonic(), self.next_free)
                self.next_free = start + 0.0001 + size / self.cap_bps
                done = self.next_free
            time.sleep(max(0.0, done - time.monotonic()))
        else:
            time.sleep(self.fixed_s)

    def getattr(self, path, fh=None):
        st = os.lstat(self._path(path))
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime",
                                            "st_nlink", "st_size", "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def statfs(self, path):
        st = os.statvfs(self._path(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                            "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def open(self, path, fi):
        fi.fh = os.open(self._path(path), fi.flags & ~(os.O_DIRECT if hasattr(os, "O_DIRECT") else 0))
        fi.direct_io = True
        return 0

    def read(self, path, size, offset, fi):
        self._delay(fi.fh, offset, size)
        return os.pread(fi.fh, size, offset)

    def write(self, path, data, offset, fi):
        self._delay(fi.fh, offset, len(data))
        return os.pwrite(fi.fh, data, offset)

    def truncate(self, path, length, fh=None):
        os.truncate(self._path(path), length)

    def fsync(self, path, datasync, fi):
        os.fsync(fi.fh)
        return 0

    def fallocate(self, path, mode, offset, length, fi):
        if mode & FALLOC_FL_PUNCH_HOLE and self.model.startswith("discard:"):
            with self.head_lock:   # one unmap at a time
                time.sleep(self.discard_s)
        if _libc.fallocate(fi.fh, mode, ctypes.c_longlong(offset), ctypes.c_longlong(length)) != 0:
            raise FuseOSError(ctypes.get_errno())
        return 0

    def flush(self, path, fi):
        return 0

    def release(self, path, fi):
        os.close(fi.fh)
        return 0


# fusepy's operations table stops at ioctl (libfuse 2.8); libfuse 2.9's goes
# on to fallocate, which a loop device's discards become. The table is
# extended here (NULL for the members between) so that punching holes
# reaches SlowFs.fallocate instead of failing with EOPNOTSUPP.
FALLOC_FL_PUNCH_HOLE = 0x02
_libc = ctypes.CDLL(None, use_errno=True)   # os has posix_fallocate only, without modes


class _Operations29(ctypes.Structure):
    _fields_ = fusepy.fuse_operations._fields_ + [
        ("poll", ctypes.c_void_p), ("write_buf", ctypes.c_void_p), ("read_buf", ctypes.c_void_p),
        ("flock", ctypes.c_void_p),
        ("fallocate", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_longlong,
                                       ctypes.c_longlong, ctypes.POINTER(fusepy.fuse_file_info))),
    ]


class Fuse29(FUSE):
    def fallocate(self, path, mode, offset, length, fip):
        return self.operations("fallocate", path.decode(self.encoding), mode, offset, length, fip.contents)


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__ if __doc__ else "slowfs.py BACKDIR MOUNTPOINT MODEL")
    root, mnt, model = sys.argv[1:]
    fusepy.fuse_operations = _Operations29
    Fuse29(SlowFs(root, model), mnt, foreground=True, raw_fi=True, allow_other=True,
         nothreads=False, fsname="iodiag-slowfs")


if __name__ == "__main__":
    try:
        main()
    except FuseOSError as e:
        sys.exit(e.errno or errno.EIO)
