# shellcheck shell=sh
# loose.sh: the StrictModes check, sourced by the launcher (installed.sh)
# and by report's digest before either runs the installed agent.

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
