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
	# the path and its folders up to $HOME, / or ., farthest first (ps),
	# their lines from one ls, not an ls and a dirname each (C order
	# lists a folder before what is in it: the same order); the last
	# loose one, the nearest, is named. A line short (a part gone
	# meanwhile) refuses the path.
	p=$1 ps=''
	while :; do
		ps=$p$nl_$ps
		if [ "$p" = "$HOME" ] || [ "$p" = / ] || [ "$p" = . ]; then break; fi
		case $p in
		*/*) p=${p%/*} && [ -n "$p" ] || p=/ ;;
		*) p=. ;;
		esac
	done
	set -f
	# shellcheck disable=SC2086 # the chain, one path a line (IFS below)
	ls_=$(IFS=$nl_ && LC_ALL=C ls -ldn -- $ps 2>/dev/null) || ls_=''
	set +f
	bad=''
	while [ -n "$ps" ]; do
		p=${ps%%"$nl_"*} ps=${ps#*"$nl_"}
		case $ls_ in *"$nl_"*) l=${ls_%%"$nl_"*} ls_=${ls_#*"$nl_"} ;; *) l=$ls_ ls_='' ;; esac
		if [ -z "$l" ]; then
			bad="? ? $p"
			continue
		fi
		m='' u=''
		IFS=' ' read -r m _ u _ <<EOF || { bad="? ? $p"; continue; }
$l
EOF
		case $m in
		'') bad="? ? $p" ;;
		?????w* | ????????w*) bad="$m $u $p" ;;
		*) if [ "$u" != "$me" ] && [ "$u" != 0 ]; then bad="$m $u $p"; fi ;;
		esac
	done
	[ -n "$bad" ] || return 1
	echo "$bad"
}
nl_='
'
