# shellcheck shell=sh disable=SC2034 # its variables are for the script it starts
# where.sh: where the installed agent of protocol $3 (synthwatch-agent/V)
# lives on this host, and what the host has to receive it. Sourced as the
# start of the launcher and of the probe (the -c scripts of sh).
# ad: $HOME/.cache/synthwatch/agent/V-OS-ARCH, ab: the agent in it;
# gz, sum: 1 when gunzip, sha256sum are here. Keyed by os and arch, as Go
# names them, so a host's build is never run on another.
proto=$3
# one uname, lowered by the shell: a fork costs milliseconds on a busy host,
# and every command that starts the agent waits for these
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
ab=$ad/synthwatch
gz=0
command -v gunzip >/dev/null 2>&1 && gz=1
sum=0
command -v sha256sum >/dev/null 2>&1 && sum=1
