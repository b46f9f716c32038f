# shellcheck shell=sh
# writable.sh DIR: why DIR cannot take a file (remote/writable.go reads it):
# "@dir D" the nearest folder that exists, "@nowrite USER LS-LINE" when the
# user may not write it, "@ro MOUNT" when its file system is mounted
# read-only, "@df FREE-KB TOTAL-KB" the space left there.
d=$1
while [ ! -d "$d" ]; do d=$(dirname -- "$d"); done
printf '@dir\t%s\n' "$d"
[ -w "$d" ] || printf '@nowrite\t%s\t%s\n' "$(id -un)" "$(ls -ld -- "$d" 2>/dev/null)"
# the longest mount point that holds d: its options say ro
awk -v d="$d" '{ m = $2; if ((index(d "/", m "/") == 1 || m == "/") && length(m) >= length(best)) { best = m; o = $4 } }
END { if (("," o ",") ~ /,ro,/) printf "@ro\t%s\n", best }' /proc/mounts 2>/dev/null
df -Pk -- "$d" 2>/dev/null | awk 'NR == 2 { printf "@df\t%s\t%s\n", $4, $2 }'
