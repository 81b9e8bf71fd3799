#!/usr/bin/env bash
# The shipped alerting rules and Alertmanager example, checked by the tools
# that will load them: promtool (syntax, and the unit tests of which alerts
# fire with which labels) and amtool. Exit 77 (ctest: skipped) without them.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
for tool in promtool amtool; do
  command -v $tool >/dev/null || { echo "SKIP: needs $tool (Debian packages prometheus, prometheus-alertmanager)"; exit 77; }
done
promtool check rules "$here/contrib/prometheus/iodiag-alerts.yml"
promtool test rules "$here/tests/prometheus/iodiag-alerts.test.yml"
amtool check-config "$here/contrib/alertmanager/iodiag-route.yml"
