#!/usr/bin/python3
"""Who ran during a lab recording: every process's command line, command,
parent and cgroup, sampled from /proc every 0.2 s until killed, one JSON line per process
when first seen (a pid's first command line: PostgreSQL rewrites its own
later). The accuracy matrix reads it to name the ground truth's victims and
culprit by command line as well as by pid (a shell loop's dd is a new process
each pass, with the same command line).

    procs.py OUT
"""
import json
import os
import sys
import time


def read(pid, name):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def sample(seen, out):
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid in seen:
            continue
        cmdline, comm, cgroup, stat = read(pid, "cmdline"), read(pid, "comm"), read(pid, "cgroup"), read(pid, "stat")
        if cmdline is None or comm is None:
            continue   # gone already
        seen.add(pid)
        unified = [l for l in (cgroup or b"").decode(errors="replace").splitlines() if l.startswith("0::")]
        # stat: "pid (comm) state ppid ...", the comm in parentheses may hold spaces
        ppid = (stat or b"").rsplit(b")", 1)[-1].split()[1:2]
        out.write(json.dumps({"pid": pid, "ppid": ppid[0].decode() if ppid else "",
                              "comm": comm.decode(errors="replace").strip(),
                              "cmdline": cmdline.replace(b"\0", b" ").decode(errors="replace").strip(),
                              "cgroup": unified[0][3:] if unified else ""}) + "\n")
    out.flush()


def main():
    seen = set()
    with open(sys.argv[1], "w") as out:
        while True:
            sample(seen, out)
            time.sleep(0.2)


if __name__ == "__main__":
    main()
