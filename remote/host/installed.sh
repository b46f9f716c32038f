# shellcheck shell=sh disable=SC2154 # where.sh sets ab, ad, os, arch, gz, sum, proto
# installed.sh (after where.sh): run the installed agent when it is
# there and safe, as "@A NONCE refused MODE UID PATH" when it is not safe,
# "@A NONCE missing GZ SUM OS ARCH DIR" when it is not there; the launcher
# goes on to the deployed binary or the shell then. $1 the nonce, $4 the
# bytes of the shell agent's script on stdin (the agent skips them), $7
# the first request (base64 of its frame) or "".

# loose PATH: the first of PATH and its folders up to $HOME that is not
# the user's (or root's), or that group or others may write, as "MODE UID
# PATH"; nothing and 1 when none is. OpenSSH's StrictModes asks the same
# of authorized_keys: a file planted in a shared cache, or a folder anyone
# may write (where one may be swapped in), is refused.
loose() {
	me=$(id -u)
	p=$1
	set -f
	while :; do
		l=$(ls -ldn -- "$p" 2>/dev/null) || {
			echo "? ? $p"
			return 0
		}
		# shellcheck disable=SC2086 # the fields of ls's line
		set -- $l
		case $1 in
		?????w* | ????????w*)
			echo "$1 $3 $p"
			return 0
			;;
		esac
		if [ "$3" != "$me" ] && [ "$3" != 0 ]; then
			echo "$1 $3 $p"
			return 0
		fi
		if [ "$p" = "$HOME" ] || [ "$p" = / ] || [ "$p" = . ]; then
			return 1
		fi
		p=$(dirname -- "$p")
	done
}

if [ -e "$ab" ] || [ -L "$ab" ]; then
	if bad=$(loose "$ab"); then
		printf '@A %s refused %s\n' "$1" "$(printf %s "$bad" | tr '\n' '?')"
	else
		exec "$ab" agent --serve "$proto" --skip "$4" "$1" "$7"
	fi
else
	printf '@A %s missing %s %s %s %s %s\n' "$1" "$gz" "$sum" "$os" "$arch" "$(printf %s "$ad" | tr '\n' '?')"
fi
