# shellcheck shell=sh
# install.sh DIR SHA256 SIZE GZ (after loose.sh): the agent on stdin (gzip
# when GZ is 1) to DIR/synthwatch: written to a temp name beside it, its
# size and (where sha256sum is) its hash checked, then renamed, so a cut or
# corrupt copy is never run. Folders made for the user alone. A folder on
# the way that is not the user's or others may write is refused before
# anything is written (exit 3): the launcher would refuse the agent there
# (installed.sh), and run another synthwatch in its place, the one named.
umask 077
d=$1
want=$2
size=$3
gz=$4
mkdir -p -- "$d" || exit 1
if bad=$(loose "$d"); then
	w=$(command -v synthwatch 2>/dev/null) || w="$HOME/.local/bin/synthwatch"
	echo "synthwatch: refusing to install the agent to $d: $bad (mode, owner uid, path) is not yours or others may write it, so the launcher would never run it (as OpenSSH's StrictModes asks) and would run $w in its place if it speaks the protocol; fix: chmod go-w that folder, or make it yours" >&2
	exit 3
fi
t="$d/.synthwatch.tmp-$$"
trap 'rm -f -- "$t"' EXIT
if [ "$gz" = 1 ]; then
	gunzip -c >"$t" || exit 1
else
	cat >"$t" || exit 1
fi
got=$(wc -c <"$t")
got=$((got + 0))
if [ "$got" != "$size" ]; then
	echo "synthwatch: the agent arrived with $got of $size bytes" >&2
	exit 1
fi
if command -v sha256sum >/dev/null 2>&1; then
	h=$(sha256sum <"$t")
	h=${h%% *}
	if [ "$h" != "$want" ]; then
		echo "synthwatch: the agent arrived with sha256 $h, not $want" >&2
		exit 1
	fi
fi
chmod 700 "$t" && mv -f -- "$t" "$d/synthwatch" || exit 1
trap - EXIT
