#!/usr/bin/env bash
# Runs the browser end-to-end test, installing Debian's Chromium first when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get install -y --no-install-recommends chromium || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends chromium; }
fi
exec go test -count=1 -timeout 10m ./e2e/ "$@"
