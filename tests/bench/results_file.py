"""Where the overhead benchmarks write what they measured: one Markdown file per
day, docs/results/overhead-<YYYY-MM-DD>.md (UTC), one section per benchmark,
headed by the time and the machine it ran on. A benchmark run again the same
day replaces its own section; the others stay. The docs cite the latest file."""
import datetime
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_DIR = os.path.normpath(os.path.join(HERE, "../../docs/results"))


def machine():
    """One line naming the machine: host, kernel, CPUs and their model, memory."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    u = os.uname()
    return f"{u.nodename}, kernel {u.release}, {os.cpu_count()} CPUs ({model}), {mem_gib:.0f} GiB"


def write_results(section, body, results_dir=RESULTS_DIR, now=None):
    """Puts `body` (Markdown) under "## <section>" in today's file and returns its path."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    path = os.path.join(results_dir, f"overhead-{now:%Y-%m-%d}.md")
    os.makedirs(results_dir, exist_ok=True)
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if not text:
        text = f"# Overhead measured on {now:%Y-%m-%d} (UTC)\n\nWritten by tests/bench; see docs/overhead.md.\n"
    new = f"## {section}\n\n{now:%H:%M} UTC on {machine()}.\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: new + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + new
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")
    return path
