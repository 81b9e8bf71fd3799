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
