# shellcheck shell=sh
# digest.sh BIN KEEP ARGS...: run "BIN ARGS..." (report's digest,
# cmd/synthwatch/report.go) with the binary found as a launch finds it
# (BIN, --worker-bin; "" for synthwatch on PATH, else
# ~/.local/bin/synthwatch, where deploy puts it), else, with no BIN, the
# host agent a poll installed (synthwatch too, run only when it passes the
# launcher's StrictModes check, loose.sh). With none, exit 127 saying so.
# KEEP is "keep", or "no-keep" for --no-install: the digest then writes
# nothing on the host (SYNTHWATCH_NO_INSTALL).
bin=$1; keep=$2; shift 2
if [ "$keep" != keep ]; then
  SYNTHWATCH_NO_INSTALL=1
  export SYNTHWATCH_NO_INSTALL
fi
given=$bin
if [ -z "$bin" ]; then
  bin=$(command -v synthwatch 2>/dev/null) || bin="$HOME/.local/bin/synthwatch"
fi
if [ -z "$given" ] && ! { [ -f "$bin" ] && [ -x "$bin" ]; }; then
  # shellcheck source=/dev/null # remote.InstalledAgentSh, sent inline: it sets ia
  . ./InstalledAgentSh
  # shellcheck disable=SC2154 # set by InstalledAgentSh
  [ -z "$ia" ] || bin=$ia
fi
# shellcheck disable=SC2015 # either test failing is the refusal
[ -f "$bin" ] && [ -x "$bin" ] || { echo "synthwatch-report: no synthwatch binary on the host ($bin)" >&2; exit 127; }
exec "$bin" "$@"
