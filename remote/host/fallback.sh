# shellcheck shell=sh disable=SC2086,SC2154,SC2034,SC2016,SC2020,SC2030,SC2031
# (SC2086: $to, $s, $sp, $files and $outs are split on purpose, under set -f
# where a name may hold a glob; SC2154, SC2034: yN, zN, fp, fy, fz and c are
# set and read through eval; SC2016: the single quotes are eval's; SC2020:
# tr maps three characters to newlines; SC2030, SC2031: each spawn's t is
# its own.)
# fallback.sh: the one reader of a host with no Go agent (none installed,
# --no-install, no write access, no build for its arch, or while the agent
# is being installed): one exec a poll, its ops in its arguments (see the
# Batch methods in batch.go), after $1, the nonce that ends every record.
# It caches nothing on the host and sources nothing from it. It uses only
# POSIX sh and coreutils (stat, head, tail, wc), and a temp dir it removes.
# It forks as little as it can: a fork costs a millisecond or more on a busy
# host, and a cold start waits for the whole script. So a read of known
# length goes straight to the output, and the nonce after it proves it was
# whole: a file that shrank in between ends the parse.
export LC_ALL=C
unset CDPATH # else cd prints where it went, and a realpath reads it twice
# GNU or busybox stat, or nothing: another stat would make every answer an
# error; timeout(1), where it works (GNU, busybox), bounds every read of a
# file whose kind is not known and every command. One program asks both.
to=
if timeout -k 1 5 stat -L -c %s / >/dev/null 2>&1; then to="timeout -k 5"
else
  stat -L -c %s / >/dev/null 2>&1 || { echo "synthwatch-batch: no stat -c here" >&2; exit 72; }
  timeout -k 1 5 true >/dev/null 2>&1 && to="timeout -k 5"
fi
dd=; command -v dd >/dev/null 2>&1 && dd=1
k=$1; shift
# the temp dir by one mkdir: the nonce is not known before the exec, and
# mkdir fails on a name already there (then mktemp makes it)
t=; case $k in *[!~0-9a-z]*|'') ;; *) t=${TMPDIR:-/tmp}/synthwatch.$$.$k; mkdir -m 700 "$t" 2>/dev/null || t=;; esac
[ -n "$t" ] || t=$(mktemp -d 2>/dev/null) || t=$(mktemp -d -t synthwatch.XXXXXX) || exit 71
trap 'rm -rf "$t"' EXIT
# KIND STATUS A B C PATH DLEN
hdr() { hp=$6; printf '@%s %s %s %s %s %s %s\n%s' "$1" "$2" "$3" "$4" "$5" "${#hp}" "$7" "$hp"; }
fin() { printf '%s\n' "$k"; }
# recm KIND STATUS A B C PATH MSG: a record of MSG and a newline, sized by the shell (no program)
recm() { hdr "$1" "$2" "$3" "$4" "$5" "$6" "$((${#7} + 1))"; printf '%s\n' "$7"; fin; }
recf() { rn=0; [ -s "$7" ] && rn=$(wc -c <"$7"); hdr "$1" "$2" "$3" "$4" "$5" "$6" "$rn"; [ "$rn" = 0 ] || cat "$7"; fin; } # ... PATH FILE
# recout KIND CODE C INDEX: a command's record from its stdout ($t.o, on
# its bytes) and stderr ($t.x), sized by one wc and written by one cat
recout() {
  wc -c "$t.o" "$t.x" >"$t.w" 2>/dev/null; { read -r on _ && read -r xn _; } <"$t.w"
  case $on$xn in *[!0-9]*|'') on=0 xn=0;; esac
  hdr "$1" ok "$2" "$on" "$3" "$4" "$((on + xn))"; [ "$((on + xn))" = 0 ] || cat "$t.o" "$t.x"; fin
}
gone() { if [ -e "$1" ]; then echo err; else echo noent; fi; }
styp() { case $1 in *[!0-9a-f]*|'') return 1;; esac; sty=o; case $((0x$1 & 61440)) in 32768) sty=f;; 16384) sty=d;; 4096) sty=p;; esac; }
# stats PATH...: their S records, from one stat for all; sets yN (f, d, p a FIFO, o; empty when gone) and zN (size), N from 1
stats() {
  stat -L -c '%s %Y %f %n' -- "$@" >"$t.s" 2>/dev/null
  exec 3<"$t.s"; have='' i=0
  for f do
    i=$((i + 1)); eval "y$i= z$i=0"
    [ -n "$have" ] || { IFS=' ' read -r lz lm lf ln <&3 && have=1; }
    if [ -n "$have" ] && [ "$ln" = "$f" ] && styp "$lf"; then have=
    elif [ ! -e "$f" ] && [ ! -L "$f" ]; then # gone: its record without a fork (LC_ALL=C: ${#} counts bytes)
      em="No such file or directory"; hdr S noent 0 0 0 "$f" "$((${#em} + 1))"; printf '%s\n' "$em"; fin; continue
    elif s=$(stat -L -c '%s %Y %f' -- "$f" 2>"$t.e") && set -- $s && styp "$3"; then lz=$1 lm=$2
    else recf S "$(gone "$f")" 0 0 0 "$f" "$t.e"; continue; fi
    eval "y$i=$sty z$i=$lz"; hdr S "$sty" "$lz" "$lm" 0 "$f" 0; fin
  done
  exec 3<&-
}
# rdf PATH OFF N FILE: the bytes [OFF, OFF+N) into FILE, by one program where dd is (a byte a read: for a few)
rdf() { if [ "$2" = 0 ]; then head -c "$3" -- "$1"; elif [ -n "$dd" ]; then dd if="$1" bs=1 skip="$2" count="$3"; else tail -c +"$(($2 + 1))" -- "$1" | head -c "$3"; fi >"$4" 2>/dev/null; }
# lastnl FILE N: FILE holds N bytes, no NUL among them, that end a line;
# they are in ln_, read by the shell (its read drops a NUL: the sizes differ)
lastnl() {
  ln_='' _s=0 _x=''
  while IFS= read -r _x; do ln_=$ln_$_x$nl _s=$((_s + ${#_x} + 1)); done <"$1"
  [ -z "$_x" ] && [ "$_s" = "$2" ]
}
rd() { # PATH OFF N EOF: the bytes [OFF, OFF+N), known to be there
  # a file it may stat but not read is an answer, not a record cut short
  if [ ! -r "$1" ]; then recm R err "$2" 0 0 "$1" "$1: Permission denied"; return; fi
  hdr R ok "$2" "$4" 0 "$1" "$3"
  if [ "$2" = 0 ]; then head -c "$3" -- "$1"; else tail -c +"$(($2 + 1))" -- "$1" | head -c "$3"; fi 2>/dev/null
  fin
}
tailat() { # PATH SIZE OFF MAXPER (OFF -N: N bytes before the end)
  sz=$2 off=$3
  case $off in -*) off=$((sz + off)); [ "$off" -lt 0 ] && off=0;; esac
  [ "$sz" -lt "$off" ] && off=0
  [ "$sz" = "$off" ] && return 0
  n=$((sz - off)) e=1; [ "$n" -gt "$4" ] && { n=$4; e=0; }
  rd "$1" "$off" "$n" "$e"
  if [ "$off" -gt 0 ]; then if [ "$sz" -lt 64 ]; then rd "$1" 0 "$sz" 1; else rd "$1" 0 64 0; fi; fi
}
# wcsplit: wc -lc's "LINES BYTES" (in wcl) as wl and wb (empty when not
# numbers), split without set: the arguments after PATH are still to come
wcsplit() { wcl=${wcl#"${wcl%%[! ]*}"}; wl=${wcl%% *}; wb=${wcl##* }; case $wl$wb in *[!0-9]*|'') wb=;; esac; }
nl='
'
cnt() { # PATH SIZE OFF K ABOVE [FROM INDEX N ARGV...: run ARGV PATH FROM+1 SIZE-FROM after a count here]
  sz=$2 off=$3 ck=$4
  [ "$sz" -lt "$off" ] && { off=0; ck=0; }
  n=$((sz - off))
  [ "$n" = 0 ] && return 0
  if [ "$n" -le "$5" ]; then rd "$1" "$((off - ck))" "$((n + ck))" 1; return 0; fi
  [ "$ck" -gt 0 ] && rd "$1" "$((off - ck))" "$ck" 0
  l=
  # from 0, the file's own count when it still holds the bytes stated; else those bytes' count
  if [ "$off" = 0 ]; then wcl=$(wc -lc <"$1"); wcsplit; [ "$wb" = "$n" ] && l=$wl; fi
  if [ -z "$l" ]; then
    wcl=$(tail -c +"$((off + 1))" -- "$1" 2>/dev/null | head -c "$n" | wc -lc); wcsplit
    if [ "$wb" = "$n" ]; then l=$wl; else
      recm N err "$((off + 1))" "$n" 0 "$1" "read ${wb:-0} of $n bytes from byte $((off + 1))"; return 0
    fi
  fi
  hdr N ok "$((off + 1))" "$n" "$l" "$1" 0; fin
  if [ $# -ge 7 ]; then # what the counted bytes hold, read here too
    cp=$1 sf=$6 xk=$7 nn=$8; shift 8
    _c=; _i=1; while [ "$_i" -le "$nn" ]; do _c="$_c \"\${$_i}\""; _i=$((_i + 1)); done # ARGV: the ops after it follow
    (eval "$to ${to:+100} $_c \"\$cp\" \"\$((sf + 1))\" \"\$((sz - sf))\"") >"$t.o" 2>"$t.x"; code=$?
    recout Y "$code" "$((sz - sf))" "$xk"
    set -- "$cp"
  fi
  # the end for the next overlap: its last 129 bytes when they end a line,
  # else 4096 (hostCounts reads alike); the 129 are read first by one
  # program, and the shell tells whether they end a line
  b=129; [ "$sz" -lt "$b" ] && b=$sz
  if rdf "$1" "$((sz - b))" "$b" "$t.l" && lastnl "$t.l" "$b"; then hdr R ok "$((sz - b))" 1 0 "$1" "$b"; printf %s "$ln_"; fin; return 0; fi
  lb=$(tail -c +"$sz" -- "$1" 2>/dev/null | head -c 1; echo .) # the "." keeps a newline
  b=4096; [ "$lb" = "$nl." ] && b=129
  [ "$sz" -lt "$b" ] && b=$sz
  rd "$1" "$((sz - b))" "$b" 1
}
# isreg PATH: a regular file (through links), else its R err record: a FIFO is never opened, it would wait for a writer
isreg() {
  [ -f "$1" ] && return 0
  if [ -e "$1" ]; then
    ik="special file"; if [ -p "$1" ]; then ik=FIFO; elif [ -d "$1" ]; then ik=directory; elif [ -S "$1" ]; then ik=socket; elif [ -b "$1" ] || [ -c "$1" ]; then ik=device; fi
    recm R err 0 0 0 "$1" "not a regular file (a $ik)"
  else recm R noent 0 0 0 "$1" "$1: No such file or directory"; fi
  return 1
}
docat() { # PATH MAX: a whole small file, of unknown length (/proc)
  isreg "$1" || return 0
  if $to ${to:+10} head -c "$2" -- "$1" >"$t.d" 2>"$t.e"; then
    dn=0; [ -s "$t.d" ] && dn=$(wc -c <"$t.d")
    hdr R ok 0 "$((dn < $2))" 0 "$1" "$dn"; [ "$dn" = 0 ] || cat "$t.d"; fin
  else recf R "$(gone "$1")" 0 0 0 "$1" "$t.e"; fi
}
# the folders of a dir: a for over the glob, never lines (a name may hold a newline)
doglob() { # PATTERN DIR NAME
  : >"$t.g"; gn=0 # its size, summed here (LC_ALL=C: ${#} counts bytes)
  for d in "$2"/*/ "$2"/.[!.]*/ "$2"/..?*/; do
    [ -d "$d" ] || continue
    d=${d%/}; f="$2/${d##*/}/$3"
    { [ -e "$f" ] || [ -L "$f" ]; } && { printf '%s\0' "$f" >>"$t.g"; gn=$((gn + ${#f} + 1)); }
  done
  hdr G ok 0 0 0 "$1" "$gn"; [ "$gn" = 0 ] || cat "$t.g"; fin
}
runn() { _n=$1; shift; _c=; _i=1; while [ "$_i" -le "$_n" ]; do _c="$_c \"\${$_i}\""; _i=$((_i + 1)); done; eval "$to ${to:+100} $_c"; }
doexec() { # INDEX N ARGV...
  xk=$1; shift
  (runn "$@") >"$t.o" 2>"$t.x"; code=$?
  recout X "$code" 0 "$xk"
}
doproc() { # PID
  docat "/proc/$1/cmdline" 65536; docat "/proc/$1/stat" 4096
  if l=$(readlink "/proc/$1/cwd" 2>/dev/null); then hdr L ok 0 0 0 "/proc/$1/cwd" "${#l}"; printf %s "$l"; fin; fi
}
opstat1() { stats "$1"; [ "$y1" = f ]; }
optail() { opstat1 "$1" && tailat "$1" "$z1" "$2" "$3"; } # PATH OFF MAXPER
opcount() { opstat1 "$1" && cnt "$1" "$z1" "$2" "$3" "$4"; } # PATH OFF K ABOVE
opcountthen() { f=$1; shift; opstat1 "$f" && cnt "$f" "$z1" "$@"; } # PATH OFF K ABOVE FROM INDEX N ARGV...
oprealpath() {
  if r=$(cd -P -- "$1" 2>"$t.e" && pwd -P); then hdr P ok 0 0 0 "$1" "${#r}"; printf %s "$r"; fin
  else recf P "$(gone "$1")" 0 0 0 "$1" "$t.e"; fi
}
eachdir() { # DIR NAME SPECS: a category's files, stated at once
  dir=$1 c=$2 sp=$3; set -f; set -- $sp; set +f
  files=; while [ $# -gt 0 ]; do files="$files $2"; shift 4; done
  set -f; set -- $files; set +f
  j=0; for f do j=$((j + 1)); eval "f$j=\$dir/\$c/\$f"; done
  eval "stats $(j=1; for f do printf '"$f%s" ' "$j"; j=$((j + 1)); done)"
  set -f; set -- $sp; set +f
  j=0
  while [ $# -gt 0 ]; do
    j=$((j + 1)); eval "fp=\$f$j fy=\$y$j fz=\$z$j"
    if [ "$fy" = f ]; then if [ "$1" = t ]; then tailat "$fp" "$fz" "-$3" "$4"; else cnt "$fp" "$fz" 0 0 "$3"; fi; fi
    shift 4
  done
}
eachrange() { # DIR SPECS FROM TO: eachdir for the folders FROM..TO-1, in the glob's order
  i_=0
  for d in "$1"/*/ "$1"/.[!.]*/ "$1"/..?*/; do
    [ -d "$d" ] || continue
    [ "$i_" -ge "$4" ] && break
    [ "$i_" -ge "$3" ] && { d=${d%/}; eachdir "$1" "${d##*/}" "$2"; }
    i_=$((i_ + 1))
  done
}
doprocs() { # STATEFILE INDEX N SCAN...
  ps=$1 pk=$2 pn=$3; shift 3
  pid=; [ -f "$ps" ] && pid=$($to ${to:+10} head -c 4194304 -- "$ps" 2>/dev/null | tr ',{}' '\n\n\n' | sed -n 's/^[[:space:]]*"pid"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n 1)
  if [ -n "$pid" ]; then doproc "$pid"; fi
  if [ -z "$pid" ] || ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ' worker '; then
    doexec "$pk" "$pn" "$@"
    [ "$on" = 0 ] || head -c "$on" "$t.o" | cut -d' ' -f1 | sort -u | while read -r p; do [ "$p" != "$pid" ] && doproc "$p"; done
  fi
}
# Every op runs in a subshell of its own (its variables and scratch files
# its own), its records in a file of its own, printed in order at the end: a
# host with many cores answers in the time of the slowest op. At most
# spawnmax run at once (a poll of 10,000 files must not fork 10,000 at a
# time on a GPU host: the trial's 2,000 took its load to 63). An op reads
# nothing from stdin.
spawnmax=16 eachmax=8
# A spawn's scratch files are $T/N.X (no dir to make: a fork less an op);
# its records go to $T/$so when the caller names the file, else $T/r.N.
# Past spawnmax, a spawn waits for the one spawnmax before it, not for all
# of them: one slow op holds up only its own slot.
spawn() {
  n=$((n + 1))
  [ "$n" -gt "$spawnmax" ] && eval "wait \$w$((n % spawnmax))"
  (t=$T/$n; "$@") </dev/null >"$T/${so:-r.$n}" 2>/dev/null &
  eval "w$((n % spawnmax))=\$!"
}
dispatch() {
  while [ $# -gt 0 ]; do
    op=$1; shift
    case $op in
    cat) spawn docat "$1" "$2"; shift 2;;
    glob) spawn doglob "$1" "$2" "$3"; shift 3;;
    tail) spawn optail "$1" "$2" "$3"; shift 3;;
    count) spawn opcount "$1" "$2" "$3" "$4"; shift 4;;
    countthen) spawn opcountthen "$@"; shift $(($7 + 7));;
    realpath) spawn oprealpath "$1"; shift;;
    each)
      dir=$1 nt=$2; shift 2; specs=; j=0
      while [ "$j" -lt "$nt" ]; do specs="$specs t $1 $2 $3"; shift 3; j=$((j + 1)); done
      nc=$1; shift; j=0
      while [ "$j" -lt "$nc" ]; do specs="$specs c $1 $2 -"; shift 2; j=$((j + 1)); done
      # the folders in eachmax runs of their own, not a subshell each: 10,000 categories cost 8 processes at a time, not 10,000
      nd=0; for d in "$dir"/*/ "$dir"/.[!.]*/ "$dir"/..?*/; do [ -d "$d" ] && nd=$((nd + 1)); done
      g=$(((nd + eachmax - 1) / eachmax)) j=0
      while [ "$j" -lt "$nd" ]; do spawn eachrange "$dir" "$specs" "$j" "$((j + g))"; j=$((j + g)); done;;
    exec) spawn doexec "$@"; shift $(($2 + 2));;
    procs) spawn doprocs "$@"; shift $(($3 + 3));;
    *) echo "synthwatch-batch: unknown op $op" >&2; exit 70;;
    esac
  done
}
# the one-shot main: "@H NONCE" first: what a login shell printed before
# it, newline or not, is cut there. The records follow gzip'd where gzip
# is ("@Z NONCE" says so): a cold poll is mostly log text, which SSH
# carries as it is. The first, U, says whether base64 and gunzip are here
# (A 1): the next poll's command may then come packed (execchan.go's
# PackCommand), whole on the line.
printf '@H %s\n' "$k"
T=$t n=0 so='' # its own, not a login's exports
up=0; command -v base64 >/dev/null 2>&1 && command -v gunzip >/dev/null 2>&1 && up=1
{ hdr U ok "$up" 0 0 '' 0; fin; } >"$T/r.0"
dispatch "$@"
wait
j=1; outs=r.0; while [ "$j" -le "$n" ]; do outs="$outs r.$j"; j=$((j + 1)); done
if [ "$n" = 0 ]; then :
elif command -v gzip >/dev/null 2>&1; then printf '@Z %s\n' "$k"; (cd "$T" && exec cat $outs) | gzip -1
else (cd "$T" && exec cat $outs); fi
