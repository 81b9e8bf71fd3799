#!/usr/bin/env bash
# iodiag installed like a package, checked the way a user would meet it.
#
#   tests/install/install_test.sh tree|units|deb BUILD_DIR SOURCE_DIR
#
# tree   cmake --install into a scratch prefix: the layout (bin/, share/iodiag/,
#        the unit directory, the docs), and the installed binary, run from / with
#        the source tree hidden (a private mount namespace mounts an empty tmpfs
#        over it, as root) or at least reporting its data directory (-v), gives
#        the build tree's verdict on recorded bundles.
# units  systemd-analyze verify on the installed units: no warning at all.
# deb    cpack -G DEB: the package's contents and Depends (dpkg-deb), its units
#        name /usr/bin/iodiag, and its binary, unpacked anywhere, gives the same
#        verdict from its own data.
# Exit 77 (ctest: skipped) with the reason when a tool is missing.
set -euo pipefail
mode=${1:?tree|units|deb}; build=$(cd "${2:?build dir}" && pwd); source=$(cd "${3:?source dir}" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
work=$(mktemp -d /tmp/iodiag-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
bundles=(dirty_throttle fsync_storm_xfs blkio_throttle cached_reads)
for b in "${bundles[@]}"; do cp "$source/tests/fixtures/bundles/$b.json" "$work/"; done

# same_verdicts BINARY DATA_DIR_EXPECTED: each bundle's JSON and text verdicts
# equal the build tree's, and -v names the data directory it used.
same_verdicts() {
  local bin=$1 want_rules=$2 b fmt
  for b in "${bundles[@]}"; do
    for fmt in json text; do
      # -v on both sides: it also makes the text verdict cite provenance in full
      "$build/iodiag" -v replay "$work/$b.json" --format $fmt > "$work/want" 2>/dev/null
      (cd / && "$bin" -v replay "$work/$b.json" --format $fmt > "$work/got" 2> "$work/err") ||
        fail "$bin replay $b: $(cat "$work/err")"
      # Findings cite their rule file: the same rule, read from where it was installed.
      sed -i "s#$want_rules/#$source/rules/#g" "$work/got"
      cmp -s "$work/want" "$work/got" || fail "$bin gives another $fmt verdict on $b than the build tree: $(diff "$work/want" "$work/got" | head -5)"
    done
    grep -qF "rules: $want_rules (the installation next to the binary)" "$work/err" ||
      fail "$bin did not use $want_rules: $(grep 'rules:' "$work/err")"
  done
}

install_tree() {   # -> $work/prefix
  cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || fail "cmake --install: $(tail "$work/install.log")"
}

case $mode in
  tree)
    install_tree
    p=$work/prefix
    for f in bin/iodiag share/iodiag/rules/device.yaml share/iodiag/rules/README.md \
             share/iodiag/playbooks/dirty-lower-ratios.yaml share/iodiag/schemas/iodiag-verdict.schema.json \
             share/iodiag/schemas/iodiag-watch-capture.schema.json \
             lib/systemd/system/iodiag-check.service lib/systemd/system/iodiag-check.timer \
             lib/systemd/system/iodiag-watch.service share/doc/iodiag/README.md \
             share/doc/iodiag/examples/prometheus/iodiag-alerts.yml \
             share/doc/iodiag/examples/alertmanager/iodiag-route.yml; do
      [[ -e $p/$f ]] || fail "$f not installed under the prefix"
    done
    n_src=$(ls "$source"/rules/*.yaml | wc -l); n_inst=$(ls "$p"/share/iodiag/rules/*.yaml | wc -l)
    [[ $n_src -eq $n_inst ]] || fail "$n_inst rule files installed, $n_src in the source"
    grep -qx "ExecStart=$p/bin/iodiag check \$IODIAG_CHECK_ARGS" "$p/lib/systemd/system/iodiag-check.service" ||
      fail "iodiag-check.service does not start $p/bin/iodiag"
    same_verdicts "$p/bin/iodiag" "$p/share/iodiag/rules"
    # The source tree hidden: nothing of the checkout can be read.
    if [[ $(id -u) -eq 0 ]] && command -v unshare >/dev/null; then
      unshare --mount --propagation private sh -c "mount -t tmpfs none '$source' && cd / &&
        [ ! -e '$source/rules' ] && '$p/bin/iodiag' replay '$work/dirty_throttle.json' --format json" > "$work/hidden" ||
        fail "the installed binary fails with the source tree hidden"
      "$build/iodiag" replay "$work/dirty_throttle.json" --format json > "$work/want"
      sed -i "s#$p/share/iodiag/rules/#$source/rules/#g" "$work/hidden"
      cmp -s "$work/want" "$work/hidden" || fail "another verdict with the source tree hidden"
      echo "installed binary: same verdicts with the source tree hidden"
    else
      echo "not root: the source tree was not hidden; -v showed the installed data directory was used"
    fi
    # A build-tree binary copied out of the build tree has no data of its own:
    # it must say so, not silently read the checkout.
    cp "$build/iodiag" "$work/stray-iodiag"
    if (cd / && "$work/stray-iodiag" -v replay "$work/cached_reads.json" > /dev/null 2> "$work/err"); then
      grep -q "rules: .*(the install location compiled in)" "$work/err" ||
        fail "a binary outside both the build tree and an installation read: $(grep 'rules:' "$work/err")"
    fi
    echo "install tree: OK" ;;

  units)
    command -v systemd-analyze >/dev/null || skip "needs systemd-analyze (Debian package systemd)"
    install_tree
    units=("$work"/prefix/lib/systemd/system/iodiag-*)
    [[ ${#units[@]} -eq 3 ]] || fail "expected 3 units, got: ${units[*]}"
    out=$(systemd-analyze verify "${units[@]}" 2>&1) || fail "systemd-analyze verify: $out"
    [[ -z $out ]] || fail "systemd-analyze verify warns: $out"
    for key in RandomizedDelaySec= Persistent=true; do
      grep -q "^$key" "$work/prefix/lib/systemd/system/iodiag-check.timer" || fail "timer lacks $key"
    done
    for key in Nice=19 IOSchedulingClass=idle CPUSchedulingPolicy=batch "SuccessExitStatus=1 2"; do
      grep -qx "$key" "$work/prefix/lib/systemd/system/iodiag-check.service" || fail "check service lacks $key"
    done
    echo "systemd units: verified" ;;

  deb)
    for t in cpack dpkg-deb dpkg-shlibdeps fakeroot; do
      command -v $t >/dev/null || skip "needs $t (Debian packages cmake, dpkg-dev, fakeroot)"
    done
    (cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" 2>&1) ||
      fail "cpack -G DEB: $(tail -20 "$work/cpack.log")"
    deb=$(ls "$work"/pkg/iodiag_*.deb)
    echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
    dpkg-deb -c "$deb" | awk '{print $6}' > "$work/contents"
    for f in ./usr/bin/iodiag ./usr/share/iodiag/rules/device.yaml ./usr/share/iodiag/playbooks/dirty-lower-ratios.yaml \
             ./usr/share/iodiag/schemas/iodiag-verdict.schema.json ./usr/lib/systemd/system/iodiag-check.service \
             ./usr/lib/systemd/system/iodiag-check.timer ./usr/lib/systemd/system/iodiag-watch.service \
             ./usr/share/doc/iodiag/examples/prometheus/iodiag-alerts.yml; do
      grep -qx "$f" "$work/contents" || fail "$f not in the package"
    done
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "Depends: $depends"
    for lib in libc6 libstdc++6 libbpf1 libyaml-cpp libspdlog libsystemd0; do
      [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib"
    done
    dpkg-deb -x "$deb" "$work/root"
    grep -qx 'ExecStart=/usr/bin/iodiag check $IODIAG_CHECK_ARGS' "$work/root/usr/lib/systemd/system/iodiag-check.service" ||
      fail "the packaged unit does not start /usr/bin/iodiag"
    same_verdicts "$work/root/usr/bin/iodiag" "$work/root/usr/share/iodiag/rules"
    echo "deb package: OK" ;;
  *) fail "mode: tree, units or deb" ;;
esac
