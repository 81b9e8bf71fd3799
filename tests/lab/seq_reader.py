#!/usr/bin/python3
"""A reader for the lab's readahead scenarios (issue 34): reads FILE from
start to end in BS-byte read() calls, over and over until killed, dropping
the file's pages from the page cache before each pass (posix_fadvise
DONTNEED) so every pass reads from the device as the first one did. With
--random it reads BS-byte blocks at random offsets instead (the control:
readahead does not help a random reader). Its process name is python3.

    seq_reader.py FILE BS [--random]
"""
import os
import random
import sys


def main():
    path, bs = sys.argv[1], int(sys.argv[2])
    randomly = "--random" in sys.argv[3:]
    size = os.path.getsize(path)
    while True:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if randomly:
            blocks = size // bs
            for _ in range(blocks):
                os.pread(fd, bs, random.randrange(blocks) * bs)
        else:
            while os.read(fd, bs):
                pass
        os.close(fd)


if __name__ == "__main__":
    main()
