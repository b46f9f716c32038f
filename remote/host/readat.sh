# shellcheck shell=sh
# readat.sh PATH FROM N: N bytes of PATH from byte FROM (1 is the first),
# a host's read with no SFTP server (remote/shellfs.go). Exit 44: no such
# path; 45: not a regular file, its kind on stdout. A FIFO is never opened
# (it would block); tail -c +FROM starts there in any regular file,
# /proc's too, and head ends it.
[ -e "$1" ] || exit 44
if ! [ -f "$1" ]; then if [ -p "$1" ]; then echo FIFO; elif [ -d "$1" ]; then echo directory; else echo special file; fi; exit 45; fi
[ -r "$1" ] || { echo "permission denied" >&2; exit 1; }
tail -c +"$2" -- "$1" | head -c "$3"
