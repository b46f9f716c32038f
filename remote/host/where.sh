# shellcheck shell=sh disable=SC2034 # its variables are for the script it starts
# where.sh: where the installed agent of protocol $3 (synthwatch-agent/V)
# lives on this host, and what the host has to receive it. Sourced as the
# start of the launcher and of the probe (the -c scripts of sh).
# ad: $HOME/.cache/synthwatch/agent/V-OS-ARCH, ab: the agent in it;
# gz, sum: 1 when gunzip, sha256sum are here. Keyed by os and arch, as Go
# names them, so a host's build is never run on another.
proto=$3
ad=
# $6 (the launcher's): the platform this host's agent named in its last
# hello to this laptop ("linux-amd64"). Where that agent is still there,
# no uname: a fork costs milliseconds on a busy host, and every command
# that starts the agent waits for it. Where it is not, uname says, so an
# install goes where this host's platform keys it.
case ${6-} in
'' | *[!a-z0-9-]* | -* | *- | *-*-*) ;;
*-*) [ -e "${HOME:-/nonexistent}/.cache/synthwatch/agent/${proto##*/}-$6/synthwatch" ] && os=${6%-*} arch=${6#*-} ad="${HOME:-/nonexistent}/.cache/synthwatch/agent/${proto##*/}-$6" ;;
esac
if [ -z "$ad" ]; then
	# one uname, lowered by the shell
	um=$(uname -sm 2>/dev/null)
	os=${um%% *} arch=${um##* }
	case $os in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	FreeBSD) os=freebsd ;;
	*[A-Z]*) os=$(printf %s "$os" | tr '[:upper:]' '[:lower:]') ;;
	esac
	case $arch in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	armv7l) arch=arm ;;
	esac
	ad="${HOME:-/nonexistent}/.cache/synthwatch/agent/${proto##*/}-$os-$arch"
fi
ab=$ad/synthwatch
gz=0
command -v gunzip >/dev/null 2>&1 && gz=1
sum=0
command -v sha256sum >/dev/null 2>&1 && sum=1
