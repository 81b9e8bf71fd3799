#!/usr/bin/python3
"""A bulk job for the lab, in Python (its process name is python3, as the
lab's SQLite applications': a neighbor with its victim's command name).

    bulk_io.py read PATH BS_KB MODE         read PATH from start to end, again and again
    bulk_io.py write PATH BS_KB MODE MB     write MB megabytes to PATH (truncated), again and again

MODE: direct (O_DIRECT), buffered, or for writes fsync (buffered, an fsync at
the end of each pass). Buffered reads drop what they read from the page cache
(posix_fadvise DONTNEED, as backup tools do not to evict others' data), so
every pass reads the storage again.
"""
import mmap
import os
import sys


def read_loop(path, bs, mode):
    flags = os.O_RDONLY | (os.O_DIRECT if mode == "direct" else 0)
    buf = mmap.mmap(-1, bs)   # page-aligned, as O_DIRECT needs
    while True:
        fd = os.open(path, flags)
        off = 0
        while True:
            n = os.preadv(fd, [buf], off)
            if n <= 0:
                break
            if mode != "direct":
                os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED)
            off += n
        os.close(fd)


def write_loop(path, bs, mode, mb):
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if mode == "direct" else 0)
    buf = mmap.mmap(-1, bs)
    buf.write(os.urandom(bs))
    while True:
        fd = os.open(path, flags, 0o644)
        for _ in range(mb * 1024 * 1024 // bs):
            os.writev(fd, [buf])
        if mode == "fsync":
            os.fsync(fd)
        os.close(fd)


def main():
    a = sys.argv[1:]
    if len(a) < 4 or a[0] not in ("read", "write") or a[3] not in ("direct", "buffered", "fsync"):
        raise SystemExit(__doc__)
    bs = int(a[2]) * 1024
    if a[0] == "read":
        read_loop(a[1], bs, a[3])
    else:
        write_loop(a[1], bs, a[3], int(a[4]) if len(a) > 4 else 256)


if __name__ == "__main__":
    main()
