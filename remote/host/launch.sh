# shellcheck shell=sh
# launch.sh BIN ROOT LOG [--server-on-stdin] ARGS...: start the worker
# (pipeline/actions.go) detached from the SSH session (setsid: its own
# process group, it survives the connection), appending to the worker log
# LOG, and print its pid. BIN "" is synthwatch on PATH, else
# ~/.local/bin/synthwatch; ARGS go to "synthwatch worker --root ROOT".
# With --server-on-stdin the server's URL is the first line of stdin.
bin=$1; root=$2; log=$3; shift 3
if [ "$1" = --server-on-stdin ]; then
  shift; IFS= read -r srv || [ -n "$srv" ] || { echo "launch: no server URL on stdin" >&2; exit 1; }
  SYNTHWATCH_SERVER=$srv; export SYNTHWATCH_SERVER
fi
# shellcheck source-path=SCRIPTDIR # sent inline (remote.HostScript), never sourced
. ./launchcheck.sh
setsid nohup "$bin" worker --root "$root" "$@" >&3 2>&3 3>&- < /dev/null &
echo $!
