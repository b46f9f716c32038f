# shellcheck shell=sh
# preflight.sh BIN ROOT LOG: launch.sh up to the start (pipeline/actions.go's
# Preflight): it fails as a launch would, with the same message, and
# starts nothing.
bin=$1; root=$2; log=$3; shift 3
# shellcheck source-path=SCRIPTDIR # sent inline (remote.HostScript), never sourced
. ./launchcheck.sh
exit 0
