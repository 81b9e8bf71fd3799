# Sourced by .ci/test: each stage's wall time and the CPU time of what it ran,
# and the table of them at the end (also when a stage failed).
#   stage NAME COMMAND...    runs COMMAND; a failure is recorded, not fatal
#   stage_record NAME WALL CPU STATUS
#   stages_table             prints the table; returns non-zero if one failed
STAGE_ROWS=()
STAGE_FAILED=0
STAGE_T0=$SECONDS

STAGE_TIMES=$(mktemp /tmp/iodiag-stage-times-XXXXXX)

# CPU seconds (user + system) of this shell's children that have ended, into
# CHILDREN_CPU (`times` in this shell: in a $(...) subshell it would count the
# subshell's children only).
children_cpu() {
  times > "$STAGE_TIMES"   # second line: "1m2.345s 0m0.678s" (children's user, system)
  CHILDREN_CPU=$(awk 'NR == 2 { s = 0
    for (i = 1; i <= NF; i++) { split($i, b, "m"); sub("s", "", b[2]); s += b[1] * 60 + b[2] }
    printf "%d", s }' "$STAGE_TIMES")
}

stage_record() {   # NAME WALL CPU STATUS
  STAGE_ROWS+=("$(printf '%-52s %7s %8s  %s' "$1" "$2" "$3" "$4")")
  [[ $4 == ok ]] || STAGE_FAILED=1
}

stage() {
  local name=$1 start=$SECONDS cpu0 status=ok
  shift
  children_cpu; cpu0=$CHILDREN_CPU
  echo "=== stage: $name" >&2
  "$@" || status="FAILED ($?)"
  children_cpu
  stage_record "$name" $((SECONDS - start)) $((CHILDREN_CPU - cpu0)) "$status"
}

stages_table() {
  local total=$((SECONDS - STAGE_T0))
  echo
  echo "Stage times (wall and CPU seconds, $(nproc) cores; stages marked 'beside' ran alongside the next ones)"
  printf '%-52s %7s %8s  %s\n' stage "wall s" "CPU s" result
  printf '%s\n' "${STAGE_ROWS[@]}"
  printf '%-52s %7s\n' "total" "$total"
  rm -f "$STAGE_TIMES"
  return $STAGE_FAILED
}

# beside_start FUNCTION: runs FUNCTION (which runs stages) in the background,
# its output in a log of its own; beside_wait WAIT_NAME then waits for it,
# prints its log, adds its stages' rows and records the wait as a stage.
beside_start() {
  BESIDE_LOG=$(mktemp /tmp/iodiag-ci-beside-XXXXXX.log)
  BESIDE_ROWS=$(mktemp /tmp/iodiag-ci-rows-XXXXXX)
  (
    STAGE_ROWS=()
    STAGE_FAILED=0
    STAGE_TIMES=$(mktemp /tmp/iodiag-stage-times-XXXXXX)   # not the parent's: both write theirs
    "$@"
    printf '%s\n' "${STAGE_ROWS[@]}" > "$BESIDE_ROWS"
    rm -f "$STAGE_TIMES"
    exit $STAGE_FAILED
  ) > "$BESIDE_LOG" 2>&1 &
  BESIDE_PID=$!
}

beside_wait() {   # WAIT_NAME; returns the background stages' status
  local start=$SECONDS status=0 rows=()
  wait "$BESIDE_PID" || status=$?
  echo "=== the stages that ran beside (log $BESIDE_LOG):" >&2
  cat "$BESIDE_LOG" >&2
  mapfile -t rows < "$BESIDE_ROWS"
  STAGE_ROWS+=("${rows[@]}")
  stage_record "$1" $((SECONDS - start)) - "$( ((status == 0)) && echo ok || echo "FAILED ($status)")"
  rm -f "$BESIDE_LOG" "$BESIDE_ROWS"
  return $status
}
