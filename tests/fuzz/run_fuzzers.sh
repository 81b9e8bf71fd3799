#!/usr/bin/env bash
# Runs libFuzzer targets built with -DIODIAG_FUZZ=ON (see docs/hardening.md "Fuzzing").
#
#   tests/fuzz/run_fuzzers.sh [--build DIR] [--seconds N] [--timeout S] [--nice] [TARGET...]
#
# Each target (default: every fuzz_* binary in DIR) fuzzes for N seconds (default
# 600), one after the other, starting from its seeds (tests/fuzz/corpus/NAME)
# after its crash reproducers (tests/fuzz/regressions/NAME) ran once each. New
# inputs go to DIR/fuzz/corpus/NAME (kept between runs, never into the source
# tree); a crash, leak, timeout (S s for one input, default 10; more on a loaded
# machine, where wall time per input grows) or sanitizer report leaves
# its input in DIR/fuzz/artifacts/NAME/ and fails. --nice runs at nice 19.
# One line per target on stdout: NAME: SECONDS s, RUNS runs, EXECS/s, corpus
# N inputs, coverage C: no crash | CRASH (reproduce: COMMAND).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)/build-sanitize
seconds=600
timeout=10
nice=()
targets=()
while (($#)); do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --nice) nice=(nice -n 19); shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "run_fuzzers.sh: unknown option $1" >&2; exit 3 ;;
    *) targets+=("$1"); shift ;;
  esac
done
# The fuzz targets that unpack a file tree make their scratch directories under
# $TMPDIR; libFuzzer ends a crashing or timed-out run with _exit(), which skips
# their cleanup, so they get a private $TMPDIR that this script removes.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/iodiag-fuzzers-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
if ((${#targets[@]} == 0)); then
  for b in "$build"/fuzz_*; do [[ -x $b ]] && targets+=("${b##*/fuzz_}"); done
fi
if ((${#targets[@]} == 0)); then
  echo "run_fuzzers.sh: no fuzz_* binaries in $build (configure with CC=clang CXX=clang++ -DIODIAG_FUZZ=ON)" >&2
  exit 3
fi

# Every sanitizer check fatal; a leak is a failure too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for t in "${targets[@]}"; do
  bin=$build/fuzz_$t
  if [[ ! -x $bin ]]; then echo "$t: no binary $bin" >&2; status=1; continue; fi
  work=$build/fuzz/corpus/$t
  artifacts=$build/fuzz/artifacts/$t/
  log=$build/fuzz/logs/$t.log
  mkdir -p "$work" "$artifacts" "${log%/*}"
  # The crash reproducers run first, each once; they are not part of the
  # corpus (a large one would raise libFuzzer's -max_len for every mutation).
  : >"$log"
  if compgen -G "$here/regressions/$t/*" >/dev/null; then
    if ! "$bin" -timeout="$timeout" -rss_limit_mb=2048 "$here/regressions/$t"/* >>"$log" 2>&1; then
      status=1
      echo "$t: a regression input fails again (log $log)"
      grep -m1 -E 'ERROR: |runtime error|iodiag fuzz target|uncaught exception|terminate called' "$log" | sed 's/^/  /'
      continue
    fi
  fi
  dirs=("$work")
  [[ -d $here/corpus/$t ]] && dirs+=("$here/corpus/$t")
  opts=(-max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$artifacts")
  [[ -f $here/dicts/$t.dict ]] && opts+=(-dict="$here/dicts/$t.dict")
  start=$(date +%s)
  "${nice[@]}" "$bin" "${opts[@]}" "${dirs[@]}" >>"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  inputs=$(find "$work" -type f | wc -l)
  if ((rc == 0)); then
    echo "$t: ${took} s, ${runs:-?} runs, ${speed:-?} execs/s, corpus $inputs inputs, coverage ${cov:-?}: no crash"
  else
    status=1
    crash=$(ls -t "$artifacts" 2>/dev/null | head -1)
    echo "$t: ${took} s, ${runs:-?} runs: CRASH (exit $rc; reproduce: $bin $artifacts$crash; log $log)"
    grep -m1 -E 'ERROR: |runtime error|iodiag fuzz target|uncaught exception|terminate called' "$log" | sed 's/^/  /'
  fi
done
exit $status
