# shellcheck shell=sh
# vitals.sh ROOT PID DISK: the host's health for a poll (pipeline/vitals.go),
# each section as an "@@sw NAME RC" line (parse.VitalsMark) then the
# command's output, caught whole: gpu and apps (nvidia-smi, its queries
# parse.GPUQuery and parse.GPUAppsQuery), load, mem, df of ROOT when DISK
# is 1, and with PID (the worker's, or 0) uptime, stat, status and clk for
# its CPU use. Each command is given 3 s where timeout(1) is there.
# shellcheck disable=SC2086 # $t is the timeout's words, or none
r=$1 p=$2 d=$3
s() { printf '@@sw %s %d\n%s\n' "$1" "$2" "$3"; }
t=; command -v timeout >/dev/null 2>&1 && t="timeout 3"
if command -v nvidia-smi >/dev/null 2>&1; then
o=$($t nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,uuid --format=csv,noheader,nounits 2>&1); s gpu $? "$o"
o=$($t nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits 2>&1); s apps $? "$o"
fi
r1() { o=; { IFS= read -r o <"$1"; } 2>/dev/null; } # a one-line /proc file, read by the shell: no cat
# rl FILE P1 [P2]: o, FILE's lines that begin with P1 or P2, read by the
# shell (a grep is a fork and an exec); status as grep's: 1 for none, 2
# for a file it could not read
nl='
'
rl() {
o='' c=1
{ while IFS= read -r l; do case $l in "$2"*|"${3-$2}"*) o=$o${o:+$nl}$l c=0;; esac; done <"$1"; } 2>/dev/null || { o="$1: cannot read"; c=2; }
return "$c"
}
r1 /proc/loadavg; s load $? "$o"
rl /proc/meminfo MemTotal: MemAvailable:; s mem $? "$o"
if [ "$d" = 1 ]; then o=$($t df -P -B1 -- "$r" 2>/dev/null || $t df -Pk -- "$r" 2>&1); s df $? "$o"; fi
if [ "$p" -gt 0 ] 2>/dev/null; then
r1 /proc/uptime; s uptime $? "$o"
r1 "/proc/$p/stat"; s stat $? "$o"
rl "/proc/$p/status" VmRSS:; s status $? "$o"
o=$(getconf CLK_TCK 2>&1); s clk $? "$o"
fi
exit 0
