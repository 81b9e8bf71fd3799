#!/usr/bin/env bash
# iodiag installed like a package, checked the way a user would meet it.
#
#   tests/install/install_test.sh tree|units|deb|apt BUILD_DIR SOURCE_DIR
#
# tree   cmake --install into a scratch prefix: the layout (bin/, share/iodiag/,
#        the unit directory, the docs, the man page, etc/), `man` reads the
#        page, `--version` names the commit, and the installed binary, run from / with
#        the source tree hidden (a private mount namespace mounts an empty tmpfs
#        over it, as root) or at least reporting its data directory (-v), gives
#        the build tree's verdict on recorded bundles.
# units  systemd-analyze verify on the installed units: no warning at all.
# deb    cpack -G DEB: the package's contents, Depends, description and
#        conffiles (dpkg-deb), lintian without errors (the warnings that stay
#        are listed in docs/operations.md, "Install and package"), its units
#        name /usr/bin/iodiag, and its binary, unpacked anywhere, gives the same
#        verdict from its own data.
# apt    (root) `apt-get install ./iodiag_*.deb` on this machine, then, from a
#        directory outside the source tree: `iodiag`, `iodiag check`,
#        `man iodiag`; `apt-get remove` leaves only the conffiles (and the
#        state directory, which the test points elsewhere), `apt-get purge`
#        nothing. The package is purged on every exit path; a package of
#        another origin already installed is left alone (skipped).
# Exit 77 (ctest: skipped) with the reason when a tool is missing.
set -euo pipefail
mode=${1:?tree|units|deb}; build=$(cd "${2:?build dir}" && pwd); source=$(cd "${3:?source dir}" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }
work=$(mktemp -d /tmp/iodiag-install-XXXXXX)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
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

build_deb() {   # -> $deb, $work/contents (its file list), $work/conffiles
  (cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" 2>&1) ||
    fail "cpack -G DEB: $(tail -20 "$work/cpack.log")"
  deb=$(ls "$work"/pkg/iodiag_*.deb)
  dpkg-deb -c "$deb" | awk '{print $6}' > "$work/contents"
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles > "$work/conffiles" 2>/dev/null || true
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
             share/doc/iodiag/examples/alertmanager/iodiag-route.yml share/doc/iodiag/docs/operations.md \
             share/doc/iodiag/copyright share/man/man8/iodiag.8.gz etc/default/iodiag etc/iodiag/iodiag.yaml; do
      [[ -e $p/$f ]] || fail "$f not installed under the prefix"
    done
    if command -v man >/dev/null; then
      MANPATH=$p/share/man man -P cat iodiag 2>/dev/null | grep -q 'find where Linux storage latency goes' ||
        fail "man iodiag does not show the installed page (MANPATH=$p/share/man)"
      echo "man iodiag: the installed page"
    fi
    version=$("$p/bin/iodiag" --version)
    [[ $version =~ ^iodiag\ [0-9.]+\ \(commit\ [0-9a-f]{12}(-dirty)?\)$ ]] ||
      fail "iodiag --version does not name the version and commit: $version"
    echo "$version"
    # The shipped site configuration changes nothing, and lints clean.
    "$p/bin/iodiag" rules lint --config "$p/etc/iodiag/iodiag.yaml" > "$work/lint" 2>&1 ||
      fail "the shipped site configuration does not lint: $(cat "$work/lint")"
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
    # Documentation=man:iodiag(8): verify runs man on it, which finds the installed page.
    out=$(MANPATH=$work/prefix/share/man systemd-analyze verify "${units[@]}" 2>&1) || fail "systemd-analyze verify: $out"
    [[ -z $out ]] || fail "systemd-analyze verify warns: $out"
    for key in RandomizedDelaySec= Persistent=true; do
      grep -q "^$key" "$work/prefix/lib/systemd/system/iodiag-check.timer" || fail "timer lacks $key"
    done
    for key in Nice=19 IOSchedulingClass=idle CPUSchedulingPolicy=batch "SuccessExitStatus=1 2"; do
      grep -qx "$key" "$work/prefix/lib/systemd/system/iodiag-check.service" || fail "check service lacks $key"
    done
    echo "systemd units: verified" ;;

  deb)
    for t in cpack dpkg-deb dpkg-shlibdeps fakeroot lintian; do
      command -v $t >/dev/null || skip "needs $t (Debian packages cmake, dpkg-dev, fakeroot, lintian)"
    done
    build_deb
    echo "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"
    # The description: the summary, then lines that each start with one space
    # and none with a CMake list's ";".
    dpkg-deb -f "$deb" Description > "$work/description"
    ! grep -q '^ *;' "$work/description" || fail "the description has lines starting with ';': $(cat "$work/description")"
    [[ $(head -1 "$work/description") == "find where Linux storage latency goes" ]] ||
      fail "the description's first line is not the summary: $(head -1 "$work/description")"
    [[ -s $work/conffiles ]] || fail "no conffiles in the package"
    for f in /etc/default/iodiag /etc/iodiag/iodiag.yaml; do
      grep -qx "$f" "$work/conffiles" || fail "$f is not a conffile: $(cat "$work/conffiles")"
      grep -qx ".$f" "$work/contents" || fail "$f not in the package"
    done
    # lintian: errors fail; the warnings that stay are documented with why.
    lintian --tag-display-limit 0 "$deb" > "$work/lintian" 2>&1 || true
    sed 's/^/lintian: /' "$work/lintian"
    ! grep -q '^E:' "$work/lintian" || fail "lintian reports errors (above)"
    for f in ./usr/bin/iodiag ./usr/share/man/man8/iodiag.8.gz ./usr/share/doc/iodiag/copyright ./usr/share/iodiag/rules/device.yaml ./usr/share/iodiag/playbooks/dirty-lower-ratios.yaml \
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
  apt)
    [[ $(id -u) -eq 0 ]] || skip "needs root (apt-get install)"
    for t in cpack dpkg-deb dpkg-shlibdeps fakeroot apt-get man; do
      command -v $t >/dev/null || skip "needs $t (Debian packages cmake, dpkg-dev, fakeroot, apt, man-db)"
    done
    if dpkg-query -W -f='${Status}' iodiag 2>/dev/null | grep -q installed; then
      [[ $(dpkg-query -W -f='${Maintainer}' iodiag) == "iodiag developers <iodiag@example.org>" ]] ||
        skip "a package named iodiag of another origin is installed: left alone"
      echo "an iodiag package left by an earlier run (killed?): purging it first"
      dpkg --purge iodiag > /dev/null
    fi
    # The machine lock: a package installed system-wide, BPF loaded.
    if [[ ${IODIAG_LIVE_LOCK_HELD:-0} != 1 ]]; then exec 9>/run/lock/iodiag-live.lock; flock 9; fi
    build_deb
    # From here on the machine is restored on every exit path.
    apt_opts=(-y -q -o DPkg::Lock::Timeout=600)
    cleanup() {
      if dpkg-query -W -f='${Status}' iodiag 2>/dev/null | grep -q installed; then
        DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" purge iodiag > /dev/null 2>&1 || dpkg --purge iodiag > /dev/null 2>&1
      fi
      rm -rf "$work"
    }
    trap cleanup EXIT
    trap 'exit 143' TERM INT HUP
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install --no-install-recommends "$deb" > "$work/apt.log" 2>&1 ||
      fail "apt-get install $deb: $(tail -5 "$work/apt.log")"
    echo "installed: $(dpkg-query -W -f='${Package} ${Version}' iodiag)"
    # Run as a user would: from /, by name, with nothing of the checkout in reach.
    out=$(cd / && env -u IODIAG_DATA_DIR PATH=/usr/sbin:/usr/bin:/sbin:/bin iodiag -v --duration 1 2> "$work/err") ||
      fail "iodiag --duration 1: $(tail -5 "$work/err")"
    grep -q '^STATUS: ' <<< "$out" || fail "iodiag printed no verdict: $out"
    grep -qF "rules: /usr/share/iodiag/rules (the installation next to the binary)" "$work/err" ||
      fail "the installed iodiag did not use /usr/share/iodiag/rules: $(grep 'rules:' "$work/err")"
    rc=0; (cd / && iodiag check --duration 1 --state-dir "$work/state" > "$work/check") || rc=$?
    ((rc <= 2)) || fail "iodiag check exited $rc: $(head -3 "$work/check")"
    grep -q '^IODIAG \(OK\|WARNING\|CRITICAL\) - ' "$work/check" || fail "iodiag check: $(head -1 "$work/check")"
    echo "iodiag check: $(head -1 "$work/check" | cut -c1-100)"
    man -P cat iodiag 2>/dev/null | grep -q 'find where Linux storage latency goes' || fail "man iodiag shows no page"
    echo "man iodiag: the page"
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" remove iodiag > "$work/apt.log" 2>&1 ||
      fail "apt-get remove: $(tail -5 "$work/apt.log")"
    # Every file the package shipped is gone but its conffiles.
    left=()
    while read -r f; do
      f=${f#.}
      [[ -n $f && ! -d $f && -e $f ]] && ! grep -qx "$f" "$work/conffiles" && left+=("$f")
    done < "$work/contents"
    ((${#left[@]} == 0)) || fail "apt-get remove left: ${left[*]}"
    for f in /etc/default/iodiag /etc/iodiag/iodiag.yaml; do [[ -e $f ]] || fail "apt-get remove took the conffile $f"; done
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" purge iodiag > "$work/apt.log" 2>&1 ||
      fail "apt-get purge: $(tail -5 "$work/apt.log")"
    for f in /etc/default/iodiag /etc/iodiag/iodiag.yaml /etc/iodiag; do [[ ! -e $f ]] || fail "apt-get purge left $f"; done
    echo "apt remove: only the conffiles left; purge: nothing"
    echo "apt install: OK" ;;
  *) fail "mode: tree, units, deb or apt" ;;
esac
