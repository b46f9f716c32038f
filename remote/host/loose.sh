# shellcheck shell=sh
# loose.sh: the StrictModes check, sourced by the launcher (installed.sh)
# and by report's digest before either runs the installed agent.

# loose PATH: whether one of PATH and its folders up to $HOME is not the
# user's (or root's), or group or others may write it: then bad is the
# nearest such, as "MODE UID PATH"; else 1, and bad empty. OpenSSH's
# StrictModes asks the same of authorized_keys: a file planted in a
# shared cache, or a folder anyone may write (where one may be swapped
# in), is refused. It runs in its caller's shell, not in $(…), and asks
# test -O whose a path is, not id -u: a fork costs milliseconds on a busy
# host, and every command that starts the agent waits for this. Its own
# variables start lo_.
loose() {
	# a shell whose test has no -O (neither -O nor ! -O holds) compares
	# with id -u's
	lo_me=
	if ! { [ -O / ] || [ ! -O / ]; } 2>/dev/null; then lo_me=$(id -u); fi
	# the path and its folders up to $HOME, / or ., farthest first
	# (lo_ps), their lines from one ls, not an ls and a dirname each (C
	# order lists a folder before what is in it: the same order); the
	# last loose one, the nearest, is named. A line short (a part gone
	# meanwhile) refuses the path.
	lo_p=$1 lo_ps=''
	while :; do
		lo_ps=$lo_p$nl_$lo_ps
		if [ "$lo_p" = "$HOME" ] || [ "$lo_p" = / ] || [ "$lo_p" = . ]; then break; fi
		case $lo_p in
		*/*) lo_p=${lo_p%/*} && [ -n "$lo_p" ] || lo_p=/ ;;
		*) lo_p=. ;;
		esac
	done
	set -f
	# shellcheck disable=SC2086 # the chain, one path a line (IFS below)
	lo_ls=$(IFS=$nl_ && LC_ALL=C ls -ldn -- $lo_ps 2>/dev/null) || lo_ls=''
	set +f
	bad=''
	while [ -n "$lo_ps" ]; do
		lo_p=${lo_ps%%"$nl_"*} lo_ps=${lo_ps#*"$nl_"}
		case $lo_ls in *"$nl_"*) lo_l=${lo_ls%%"$nl_"*} lo_ls=${lo_ls#*"$nl_"} ;; *) lo_l=$lo_ls lo_ls='' ;; esac
		if [ -z "$lo_l" ]; then
			bad="? ? $lo_p"
			continue
		fi
		lo_m='' lo_u=''
		IFS=' ' read -r lo_m _ lo_u _ <<EOF || { bad="? ? $lo_p"; continue; }
$lo_l
EOF
		# -O follows a link: a link is judged by its owner as ls listed
		# it (on Linux its mode, lrwxrwxrwx, refuses it first; on BSD and
		# macOS a link's mode is the umask's)
		case $lo_m in
		'') bad="? ? $lo_p" ;;
		?????w* | ????????w*) bad="$lo_m $lo_u $lo_p" ;;
		l*) [ "$lo_u" = 0 ] || [ "$lo_u" = "${lo_me:=$(id -u)}" ] || bad="$lo_m $lo_u $lo_p" ;;
		*) if [ "$lo_u" != 0 ] && if [ -n "$lo_me" ]; then [ "$lo_u" != "$lo_me" ]; else ! [ -O "$lo_p" ]; fi; then bad="$lo_m $lo_u $lo_p"; fi ;;
		esac
	done
	[ -n "$bad" ]
}
nl_='
'
