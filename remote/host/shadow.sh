# shellcheck shell=sh
# shadow.sh DEST: which binary the host runs for synthwatch
# (pipeline/deployhost.go): "@exec PATH REAL" what a launch without
# --worker-bin runs (launchcheck.sh's choice, in the exec's PATH: launch,
# the agent and report find it so), "@login PATH REAL" what the user's
# login shell runs by hand, "@dest REAL" the deployed file DEST, each
# with the file it resolves to.
real() { readlink -f -- "$1" 2>/dev/null || printf '%s\n' "$1"; }
p=$(command -v synthwatch 2>/dev/null) || p="$HOME/.local/bin/synthwatch"
printf '@exec\t%s\t%s\n' "$p" "$(real "$p")"
l=$("${SHELL:-sh}" -lc 'command -v synthwatch' </dev/null 2>/dev/null | tail -n 1)
case $l in /*) printf '@login\t%s\t%s\n' "$l" "$(real "$l")";; esac
printf '@dest\t%s\n' "$(real "$1")"
