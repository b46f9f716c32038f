# shellcheck shell=sh
# install.sh DIR SHA256 SIZE GZ [MODE TAG I [N]] (after loose.sh): the agent
# to DIR/synthwatch, gzip'd when GZ is 1. MODE whole (the default): it comes
# on stdin. MODE part: stdin is its part I (from 0), N bytes, kept beside it
# as .synthwatch.part-TAG-I (a part cut short is removed); MODE join: the I
# parts (I the count) are read in order; MODE clean: the parts of TAG are
# removed. The parts come on channels of their own at once: a channel moves
# one window a round trip, and Dropbear's is 24 KB (its -W). The whole is
# written to a temp name, its size and (where sha256sum is) its hash
# checked, then renamed, so a cut or corrupt copy is never run; a join
# that took removes its parts and those of an install cut off a day or
# more ago.
# Folders made for the user alone. A folder on the way that is not the
# user's or others may write is refused before anything is written (exit
# 3): the launcher would refuse the agent there (installed.sh), and run
# another synthwatch in its place.
umask 077
d=$1
want=$2
size=$3
gz=$4
mode=${5:-whole}
tag=$6
n=$7
pn=${8:-0}
bad=
case $tag in *[!0-9a-f]*) bad=1 ;; esac
case $n$pn in *[!0-9]*) bad=1 ;; esac
if [ -n "$bad" ]; then
	echo "synthwatch: a part is named by hex and numbers: $tag $n $pn" >&2
	exit 1
fi
p="$d/.synthwatch.part-$tag-"
if [ "$mode" = clean ]; then
	rm -f -- "$p"*
	exit 0
fi
mkdir -p -- "$d" || exit 1
if loose "$d"; then
	w=$(command -v synthwatch 2>/dev/null) || w="$HOME/.local/bin/synthwatch"
	echo "synthwatch: refusing to install the agent to $d: $bad (mode, owner uid, path) is not yours or others may write it, so the launcher would never run it (as OpenSSH's StrictModes asks) and would run $w in its place if it speaks the protocol; fix: chmod go-w that folder, or make it yours" >&2
	exit 3
fi
if [ "$mode" = part ]; then
	cat >"$p$n" && got=$(wc -c <"$p$n") && [ "$((got + 0))" = "$pn" ] && exit 0
	rm -f -- "$p$n"
	echo "synthwatch: part $n of the agent arrived cut short" >&2
	exit 1
fi
t="$d/.synthwatch.tmp-$$"
if [ "$mode" = join ]; then
	trap 'rm -f -- "$t" "$p"*' EXIT
else
	trap 'rm -f -- "$t"' EXIT
fi
# src: the copy as it crossed the link, whole or its parts in order
src() {
	if [ "$mode" != join ]; then
		cat
		return
	fi
	i=0
	while [ "$i" -lt "$n" ]; do
		cat -- "$p$i" || return 1
		i=$((i + 1))
	done
}
if [ "$gz" = 1 ]; then
	src | gunzip -c >"$t" || exit 1
else
	src >"$t" || exit 1
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
# a join that took removes its parts, and those of an install cut off a
# day or more ago (a concurrent one's are its own)
[ "$mode" != join ] || {
	rm -f -- "$p"*
	find "$d" -name '.synthwatch.part-*' -mtime +0 -exec rm -f -- {} + 2>/dev/null
	:
}
