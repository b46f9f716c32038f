# shellcheck shell=sh
# holders.sh PATTERNS: every /proc/PID/fd/N whose target matches PATTERNS
# (find -lname tests joined by -o, as remote/proc.go's HoldersArgv gives
# them), as "PID FD FLAGS TARGET", FLAGS the octal open flags of its
# fdinfo. The scan runs here (GNU or busybox find), so a line per match
# crosses the link, however many processes and descriptors there are.
# Its $0, synthwatch-holders, marks it ours in the host's process list.
find /proc/[0-9]*/fd -maxdepth 1 \( "$@" \) -print 2>/dev/null | while IFS= read -r f; do
  p=${f#/proc/}; pid=${p%%/*}; fd=${f##*/}
  # the flags line of its fdinfo, read by the shell: a sed is a fork and an exec
  fl=
  { while IFS= read -r l; do case $l in flags:*) fl=${l#flags:}; fl=${fl#"${fl%%[!	 ]*}"}; break;; esac; done <"/proc/$pid/fdinfo/$fd"; } 2>/dev/null
  t=$(readlink "$f" 2>/dev/null) || continue
  printf '%s %s %s %s\n' "$pid" "$fd" "${fl:-0}" "$t"
done
exit 0
