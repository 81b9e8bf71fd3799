"""Where the overhead benchmarks write what they measured: everything a run
prints, less its per-round progress lines ("  round ..."), also goes to
docs/results/<benchmark>-<UTC time>-<host>.md, headed with the date, the
command line and the machine, so that the docs cite a file the benchmark wrote
instead of tables copied by hand. One file per run: a later run never
overwrites an earlier one's figures."""
import os
import sys
import time

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


class ResultsFile:
    """Stands in for sys.stdout: writes through to it and to the results file."""

    def __init__(self, benchmark, results_dir=RESULTS_DIR):
        os.makedirs(results_dir, exist_ok=True)
        now = time.gmtime()
        self.path = os.path.join(results_dir, f"{benchmark}-{time.strftime('%Y-%m-%d-%H%M', now)}-{os.uname().nodename}.md")
        self.file = open(self.path, "w")
        script = os.path.relpath(os.path.abspath(sys.argv[0]), os.path.join(HERE, "../.."))
        self.file.write(f"# {benchmark} run {time.strftime('%Y-%m-%d %H:%M UTC', now)}\n\n"
                        f"`{' '.join([script] + sys.argv[1:])}` on {machine()}; written by the benchmark "
                        f"itself: its output, less the per-round progress lines.\n\n")
        self.stdout, self.line = sys.stdout, ""

    def write(self, text):
        self.stdout.write(text)
        self.line += text
        *done, self.line = self.line.split("\n")
        for line in done:
            if not line.startswith("  round "):
                self.file.write(line + "\n")
        self.file.flush()

    def flush(self):
        self.stdout.flush()


def tee_stdout(benchmark, results_dir):
    """From here on, what the run prints also goes to its results file (none
    when `results_dir` is empty)."""
    if results_dir:
        sys.stdout = ResultsFile(benchmark, results_dir)
        print(f"results also written to {sys.stdout.path}", file=sys.stderr)


def results_option(ap, benchmark):
    ap.add_argument("--results", default=RESULTS_DIR,
                    help=f"directory of the results file ({benchmark}-<UTC time>-<host>.md); '' for none")
