# shellcheck shell=sh disable=SC2086,SC2154,SC2034,SC2016,SC2030,SC2031,SC2317
# (SC2086: $ra, $xs are split on purpose; SC2154, SC2034: the variables
# named by number (P1, y1, z1, dk1…) are set and read through eval;
# SC2016: the single quotes are eval's; SC2030, SC2031: the body runs in
# the pipeline's subshell; SC2317: act is called through eval.)
# fallback.sh: the one reader of a host with no Go agent (none installed,
# --no-install, no write access, no build for its arch, or while the agent
# is being installed): one exec a poll, its ops in its arguments (see the
# Batch methods in batch.go), after $1, the nonce that ends every record.
# It caches nothing on the host and sources nothing from it. It uses only
# POSIX sh and coreutils (stat, head, tail, wc, cat), and a temp dir it
# removes.
#
# It forks as few processes as it can: a fork and exec cost 2-4 ms on a
# busy two-core host, and a cold status waits for the whole script. So it
# reads in two passes, not a subshell an op: the first lists every file
# and starts the commands, the second reads each file knowing its stat.
# One stat for every file; one cat for every small file read whole (in an
# M record: the laptop cuts it by the sizes); one wc for every file
# counted from its start; one tail for their ends; one stat more that
# proves those (a file whose size moved between the two is read again by
# itself); at the end one stat that sizes the temp files and one cat of
# them; gzip beside it all, in a pipe. An each op's folders go 100 at a
# time, each run so (pass2). The commands (exec ops) run in one sh under
# one timeout, each in a subshell of its own, not an sh each.
export LC_ALL=C
# else cd prints where it went, and a realpath reads it twice
unset CDPATH
k=$1
shift
# the temp dir by one mkdir: the nonce is not known before the exec, and
# mkdir fails on a name already there (then mktemp makes it)
t=; case $k in *[!~0-9a-z]*|'') ;; *) t=${TMPDIR:-/tmp}/synthwatch.$$.$k; mkdir -m 700 "$t" 2>/dev/null || t=;; esac
[ -n "$t" ] || t=$(mktemp -d 2>/dev/null) || t=$(mktemp -d -t synthwatch.XXXXXX) || exit 71
trap 'rm -rf "$t"' EXIT
nl='
'
# KIND STATUS A B C PATH DLEN: a record's header; fin its end
hdr() { hp=$6; printf '@%s %s %s %s %s %s %s\n%s' "$1" "$2" "$3" "$4" "$5" "${#hp}" "$7" "$hp"; }
fin() { printf '%s\n' "$k"; }
# recm KIND STATUS A B C PATH MSG: a record of MSG and a newline (no program)
recm() { hdr "$1" "$2" "$3" "$4" "$5" "$6" "$((${#7} + 1))"; printf '%s\n' "$7"; fin; }
# dfr KIND STATUS A B C PATH FILE [FILE2]: a deferred record of FILE's
# bytes (then FILE2's), sized by the second stat and sent by the last cat.
# B "?N": 1 when FILE holds fewer than N bytes; "=": FILE's size.
nd=0
dfr() { nd=$((nd + 1)); eval "dk$nd=\$1 ds$nd=\$2 da$nd=\$3 db$nd=\$4 dc$nd=\$5 dp$nd=\$6 df$nd=\$7 dg$nd=\${8-}"; }
# gone PATH: gs is noent when PATH is not there, else err. Of a link that
# cannot be followed gm says why: stat's words (a loop, a folder it may
# not enter), or, where its target is not there (a scratch disk not
# mounted), so, naming the target, as the agent's failText
gone() {
  gm=; if [ -e "$1" ]; then gs=err; elif [ -L "$1" ]; then gs=err
    gm=$(stat -L -c %s -- "$1" 2>&1)
    case $gm in *'No such file or directory'*) gm="a link to $(readlink -- "$1" 2>/dev/null), which is not there";; esac
  else gs=noent; fi
}
styp() { case $1 in *[!0-9a-f]*|'') return 1;; esac; sty=o; case $((0x$1 & 61440)) in 32768) sty=f;; 16384) sty=d;; 4096) sty=p;; esac; }
# the paths P1…Pnp (E 1: the op wants their S records; A what is read of
# them, act's words), stat'd at once
np=0
addp() { np=$((np + 1)); eval "P$np=\$1 E$np=\$2 A$np=\${3-}"; }
# stats FROM TO SO: one stat for paths FROM..TO, 200 at a time (within any
# ARG_MAX). SO 1: y (f, d, p a FIFO, o; empty when not stat'd), z (size)
# and m (mtime) of each, and its S record when E; else U (size, -1: none)
stats() {
  while [ "$1" -le "$2" ]; do
    sb=$(($1 + 199)); [ "$sb" -gt "$2" ] && sb=$2
    stat1 "$1" "$sb" "$3"
    set -- "$((sb + 1))" "$2" "$3"
  done
}
stat1() {
  sa=$1 so=$3 j=$1
  set --
  while [ "$j" -le "$sb" ]; do eval "case \$P$j in *'$nl'*) ;; *) set -- \"\$@\" \"\$P$j\";; esac"; j=$((j + 1)); done
  stat -L -c '%s %Y %f %n' -- "$@" >"$t/s" 2>/dev/null
  # a stat with no -c (BSD): no answer at all
  if [ "$so" = 1 ] && [ ! -s "$t/s" ] && [ $# -gt 0 ]; then
    stat -L -c %s / >/dev/null 2>&1 || { echo "synthwatch-batch: no stat -c here" >&2; echo 72 >"$t/rc"; exit 72; }
  fi
  exec 3<"$t/s"; have='' j=$sa
  while [ "$j" -le "$sb" ]; do
    eval "f=\$P$j"
    # "SIZE MTIME MODE NAME", cut by hand: read would trim a name's spaces
    [ -n "$have" ] || { IFS= read -r ln <&3 && have=1 && lz=${ln%% *} && ln=${ln#* } && lm=${ln%% *} && ln=${ln#* } && lf=${ln%% *} && ln=${ln#* }; }
    if [ -n "$have" ] && [ "$ln" = "$f" ] && styp "$lf" && case $lz$lm in *[!0-9]*|'') false;; esac; then have='' vz=$lz vm=$lm
    # (the second stat's have no newline); gone: its record without a fork
    elif [ "$so" != 1 ]; then eval "U$j=-1"; j=$((j + 1)); continue
    elif [ ! -e "$f" ] && [ ! -L "$f" ]; then
      eval "y$j= z$j=0 m$j=0"
      eval "[ \"\$E$j\" = 1 ]" && recm S noent 0 0 0 "$f" "No such file or directory"
      j=$((j + 1)); continue
    # by itself (the line read stays for the path it names)
    elif s=$(stat -L -c '%s %Y %f' -- "$f" 2>"$t/se.$nd") && set -- $s && styp "$3"; then vz=$1 vm=$2
    else
      eval "y$j= z$j=0 m$j=0"
      eval "[ \"\$E$j\" = 1 ]" && { gone "$f"; if [ -n "$gm" ]; then recm S err 0 0 0 "$f" "$gm"; else mv -f "$t/se.$nd" "$t/d.$((nd + 1))"; dfr S "$gs" 0 0 0 "$f" "$t/d.$((nd + 1))"; fi; }
      j=$((j + 1)); continue
    fi
    if [ "$so" = 1 ]; then
      eval "y$j=$sty z$j=$vz m$j=$vm"
      eval "[ \"\$E$j\" = 1 ]" && { hdr S "$sty" "$vz" "$vm" 0 "$f" 0; fin; }
    else eval "U$j=$vz"; fi
    j=$((j + 1))
  done
  exec 3<&-
}
# rd PATH OFF N EOF: the bytes [OFF, OFF+N), known to be there, straight
# to the answer: the nonce after them proves they were whole (a file that
# shrank in between ends the parse)
rd() {
  if [ ! -r "$1" ]; then recm R err "$2" 0 0 "$1" "$1: Permission denied"; return; fi
  hdr R ok "$2" "$4" 0 "$1" "$3"
  if [ "$2" = 0 ]; then head -c "$3" -- "$1"; else tail -c +"$(($2 + 1))" -- "$1" | head -c "$3"; fi 2>/dev/null
  fin
}
# endr PATH SIZE: a file's end read by itself (one not in the group's
# tail: a name with a newline, or a size that moved), its last 4096 bytes
endr() { eb=4096; [ "$2" -lt "$eb" ] && eb=$2; rd "$1" "$(($2 - eb))" "$eb" 1; }
# cntone PATH SIZE OFF: the lines of [OFF, SIZE), counted by itself
cntone() {
  n=$(($2 - $3)) l=
  # as rd says it: the reason, not "read 0 of N bytes"
  if [ ! -r "$1" ]; then recm N err "$(($3 + 1))" "$n" 0 "$1" "$1: Permission denied"; return 1; fi
  wcl=$(if [ "$3" = 0 ]; then head -c "$n" -- "$1"; else tail -c +"$(($3 + 1))" -- "$1" | head -c "$n"; fi 2>/dev/null | wc -lc)
  wcl=${wcl#"${wcl%%[! ]*}"}; cl=${wcl%% *}; cb=${wcl##* }
  case $cl$cb in *[!0-9]*|'') cb=;; esac
  if [ "$cb" = "$n" ]; then hdr N ok "$(($3 + 1))" "$n" "$cl" "$1" 0; fin; return 0; fi
  recm N err "$(($3 + 1))" "$n" 0 "$1" "read ${cb:-0} of $n bytes from byte $(($3 + 1))"; return 1
}
# the groups, read together after the second pass: W (read whole: one
# cat), C (counted from 0: one wc), N (their ends: one tail)
nw=0 nc=0 ne=0
# wh INDEX PATH SIZE: the file read whole, with the group (a name with a
# newline by itself: the groups' outputs are lines)
wh() { case $2 in *"$nl"*) rd "$2" 0 "$3" 1;; *) nw=$((nw + 1)); eval "W$nw=\$1";; esac; }
# tailat INDEX PATH SIZE OFF MAXPER (OFF -N: N bytes before the end)
tailat() {
  sz=$3 off=$4
  case $off in -*) off=$((sz + off)); [ "$off" -lt 0 ] && off=0;; esac
  [ "$sz" -lt "$off" ] && off=0
  [ "$sz" = "$off" ] && return 0
  n=$((sz - off)) e=1; [ "$n" -gt "$5" ] && { n=$5; e=0; }
  if [ "$off" = 0 ] && [ "$e" = 1 ]; then wh "$1" "$2" "$sz"; return 0; fi
  rd "$2" "$off" "$n" "$e"
  if [ "$off" -gt 0 ]; then if [ "$sz" -lt 64 ]; then rd "$2" 0 "$sz" 1; else rd "$2" 0 64 0; fi; fi
}
# cnt INDEX PATH SIZE OFF K ABOVE [1]: the count of [OFF, SIZE) (read
# whole when ABOVE holds it), with the K bytes before OFF, and the end (by
# the group's tail); 0 when counted (with 1: here, for a countthen)
cnt() {
  sz=$3 off=$4 ck=$5
  [ "$sz" -lt "$off" ] && { off=0; ck=0; }
  n=$((sz - off))
  [ "$n" = 0 ] && return 1
  if [ "$n" -le "$6" ]; then
    if [ "$((off - ck))" = 0 ]; then wh "$1" "$2" "$sz"; else rd "$2" "$((off - ck))" "$((n + ck))" 1; fi
    return 1
  fi
  [ "$ck" -gt 0 ] && rd "$2" "$((off - ck))" "$ck" 0
  case $2 in *"$nl"*) cntone "$2" "$sz" "$off" || return 1; endr "$2" "$sz"; [ -n "${7-}" ]; return;; esac
  if [ "$off" = 0 ] && [ -z "${7-}" ]; then nc=$((nc + 1)); eval "C$nc=\$1"; else cntone "$2" "$sz" "$off" || return 1; fi
  ne=$((ne + 1)); eval "N$ne=\$1"
}
# isreg PATH TYPE: a regular file, else its R err record: a FIFO is never
# opened, it would wait for a writer; a link to nothing is an error (gone)
isreg() {
  [ "$2" = f ] && return 0
  if [ -e "$1" ]; then
    ik="special file"; [ -p "$1" ] && ik=FIFO; [ -d "$1" ] && ik=directory
    recm R err 0 0 0 "$1" "not a regular file (a $ik)"
  else gone "$1"; recm R "$gs" 0 0 0 "$1" "${gm:-$1: No such file or directory}"; fi
  return 1
}
# tko N: tk, "timeout -k 5 N" where the host's timeout takes it (asked once)
tkp=
tko() {
  if [ -z "$tkp" ]; then tkp=none; command -v timeout >/dev/null 2>&1 && timeout -k 1 5 true >/dev/null 2>&1 && tkp=yes; fi
  tk=; [ "$tkp" = yes ] && tk="timeout -k 5 $1"
}
# prcat PATH MAX: a /proc file (no size to stat); a process's under the
# timeout (one stuck in D holds its cmdline's read)
prcat() {
  [ -f "$1" ] || { isreg "$1" x; return 0; }
  nd1=$((nd + 1)) tk=
  case $1 in /proc/[0-9]*) tko 10;; esac
  if $tk head -c "$2" -- "$1" >"$t/d.$nd1" 2>"$t/e.$nd1"; then dfr R ok 0 "?$2" 0 "$1" "$t/d.$nd1"
  else gone "$1"; dfr R "$gs" 0 0 0 "$1" "$t/e.$nd1"; fi
}
# doproc PID
doproc() {
  prcat "/proc/$1/cmdline" 65536; prcat "/proc/$1/stat" 4096
  if l=$(readlink "/proc/$1/cwd" 2>/dev/null); then hdr L ok 0 0 0 "/proc/$1/cwd" "${#l}"; printf %s "$l"; fin; fi
}
# wpid STATEFILE: pid, the first "pid" key's number in worker.json, read
# by the shell (64 KB at most: a real one is a few hundred bytes)
wpid() {
  pid='' _s=0
  [ -f "$1" ] || return 0
  while [ "$_s" -lt 65536 ] && { IFS= read -r _x || [ -n "$_x" ]; }; do
    _s=$((_s + ${#_x} + 1))
    while case $_x in *'"pid"'*) ;; *) false;; esac; do
      _x=${_x#*'"pid"'}; _y=${_x#"${_x%%[! 	]*}"}
      case $_y in :*) _y=${_y#:}; _y=${_y#"${_y%%[! 	]*}"}; pid=${_y%%[!0-9]*}; [ -n "$pid" ] && return 0;; esac
    done
  done <"$1" 2>/dev/null
}
# doglob PATTERN DIR NAME
doglob() {
  nd1=$((nd + 1)); : >"$t/d.$nd1"
  # the folders of a dir: a for over the glob, never lines (a name may hold a newline)
  for d in "$2"/*/ "$2"/.[!.]*/ "$2"/..?*/; do
    [ -d "$d" ] || continue
    d=${d%/}; f="$2/${d##*/}/$3"
    { [ -e "$f" ] || [ -L "$f" ]; } && printf '%s\0' "$f" >>"$t/d.$nd1"
  done
  dfr G ok 0 0 0 "$1" "$t/d.$nd1"
}
# the commands: one sh (under one timeout, where timeout is) runs each in a
# subshell of its own, all at once, its stdout, stderr and exit code in
# $t/o.I, x.I and c.I. An "sh -c PROGRAM [NAME ARGS]" is the program run
# in that subshell, not one more sh: a fork and an exec less.
runner='t=$1; shift; : >"$t/run"
runop() {
if [ $# -ge 3 ] && [ "$1" = sh ] && [ "$2" = -c ]; then _p=$3; shift 3; [ $# -gt 0 ] && shift; unset t _c _j ps i n; eval "$_p"; else exec "$@"; fi
}
ps=
while [ $# -ge 2 ]; do
i=$1 n=$2; shift 2
_c=; _j=1; while [ "$_j" -le "$n" ]; do _c="$_c \"\${$_j}\""; _j=$((_j + 1)); done
(eval "runop $_c") </dev/null >"$t/o.$i" 2>"$t/x.$i" &
ps="$ps $i:$!"
shift "$n"
done
for e in $ps; do wait "${e#*:}"; echo "$?" >"$t/c.${e%%:*}"; done'
# ref P N: the words P..P+N-1 of "$@" onto ra, as eval's references
ra='' xs='' scans='' eo=''
ref() { _j=$1; while [ "$_j" -lt "$(($1 + $2))" ]; do ra="$ra \"\${$_j}\""; _j=$((_j + 1)); done; }

# act INDEX KIND ARGS…: what the second pass reads of path INDEX, by the
# kind the first pass gave it: r MAX (a cat), t OFF MAXPER (a tail), c
# OFF K ABOVE (a count), y OFF K ABOVE (a countthen's: yok when counted)
act() {
  eval "fp=\$P$1 fy=\$y$1 fz=\$z$1"; yok=
  if [ "$2" = r ]; then
    isreg "$fp" "$fy" || return 0
    if [ "$fz" -lt "$3" ]; then wh "$1" "$fp" "$fz"; else rd "$fp" 0 "$3" 0; fi
    return 0
  fi
  [ "$fy" = f ] || return 0
  case $2 in
  t) tailat "$1" "$fp" "$fz" "$3" "$4";;
  c) cnt "$1" "$fp" "$fz" "$3" "$4" "$5";;
  y) cnt "$1" "$fp" "$fz" "$3" "$4" "$5" 1 && yok=1;;
  esac
}

body() {
up=0; command -v base64 >/dev/null 2>&1 && command -v gzip >/dev/null 2>&1 && up=1
hdr U ok "$up" 0 0 '' 0; fin
# ---- the first pass: every file's path and what is to be read of it;
# the commands, started; what needs no stat (globs, realpaths, /proc)
p=1
while [ "$p" -le $# ]; do
  # the op at word p, its first words
  eval "op=\${$p} a1=\${$((p + 1))-} a2=\${$((p + 2))-} a3=\${$((p + 3))-} a4=\${$((p + 4))-}"
  case $op in
  cat) case $a1 in /proc/*) prcat "$a1" "$a2";; *) addp "$a1" 0 "r $a2";; esac; p=$((p + 3));;
  glob) doglob "$a1" "$a2" "$a3"; p=$((p + 4));;
  tail) addp "$a1" 1 "t $a2 $a3"; p=$((p + 4));;
  count) addp "$a1" 1 "c $a2 $a3 $a4"; p=$((p + 5));;
  countthen)
    # counted here, then ARGV over the counted bytes (a steady poll's token sums)
    addp "$a1" 1 "y $a2 $a3 $a4"; eval "YF$np=\${$((p + 5))} YK$np=\${$((p + 6))} nn=\${$((p + 7))}"
    ra0=$ra ra=; ref "$((p + 8))" "$nn"; eval "YR$np=\$ra"; ra=$ra0
    p=$((p + 8 + nn));;
  realpath)
    nd1=$((nd + 1))
    if r=$(cd -P -- "$a1" 2>"$t/d.$nd1" && pwd -P); then hdr P ok 0 0 0 "$a1" "${#r}"; printf %s "$r"; fin
    else gone "$a1"; dfr P "$gs" 0 0 0 "$a1" "$t/d.$nd1"; fi
    p=$((p + 2));;
  each)
    # each DIR NT (NAME BACK MAXPER)… NC (NAME ABOVE)…: every folder's
    # files, read after the rest in runs of folders
    eo="$eo $p"; eval "p=\$((p + 3 * a2 + 4 + 2 * \${$((p + 3 + 3 * a2))}))";;
  exec) ref "$((p + 1))" "$((a2 + 2))"; xs="$xs $a1"; p=$((p + 3 + a2));;
  procs)
    # the holders' scan, unless worker.json names a live worker
    wpid "$a1"
    # its cmdline as doproc read it, under the timeout (a process stuck in
    # D holds a read of its cmdline): here a file that cannot hang, empty
    # where prcat wrote none (a realpath's stderr may have had that name)
    c=0; if [ -n "$pid" ]; then c=$((nd + 1)); : >"$t/d.$c"; doproc "$pid"; fi
    if [ -z "$pid" ] || ! { x=$(tr '\0' ' ' <"$t/d.$c") && case " $x " in *' worker '*) ;; *) false;; esac; } 2>/dev/null; then
      ref "$((p + 2))" "$((a3 + 2))"; xs="$xs $a2"; scans="$scans $a2:$pid"
    fi
    p=$((p + 4 + a3));;
  *) echo "synthwatch-batch: unknown op $op" >&2; echo 70 >"$t/rc"; exit 70;;
  esac
done
rp=
if [ -n "$xs" ]; then
  to=; command -v timeout >/dev/null 2>&1 && to="timeout -k 5 100"
  eval "$to sh -c \"\$runner\" synthwatch-run \"\$t\" $ra" &
  rp=$!
fi
# ---- the stat of every file, then the second pass: what each one reads;
# an each op's in runs of 100 folders (the shell's variables stay few:
# dash finds one by a walk of a short hash chain, slow past thousands)
pass2 "$@"
for p in $eo; do
  eval "a1=\${$((p + 1))} a2=\${$((p + 2))}"
  qq=$((p + 3)); eval "nc_=\${$((qq + 3 * a2))}"; nf=0
  for d in "$a1"/*/ "$a1"/.[!.]*/ "$a1"/..?*/; do
    [ -d "$d" ] || continue
    d=${d%/}; d=${d##*/}; nf=$((nf + 1))
    i=0; while [ "$i" -lt "$a2" ]; do eval "addp \"\$a1/\$d/\${$((qq + 3 * i))}\" 1 \"t -\${$((qq + 3 * i + 1))} \${$((qq + 3 * i + 2))}\""; i=$((i + 1)); done
    i=0; while [ "$i" -lt "$nc_" ]; do eval "addp \"\$a1/\$d/\${$((qq + 3 * a2 + 1 + 2 * i))}\" 1 \"c 0 0 \${$((qq + 3 * a2 + 2 + 2 * i))}\""; i=$((i + 1)); done
    [ "$nf" -lt 100 ] || { pass2 "$@"; nf=0; }
  done
  [ "$np" = 0 ] || pass2 "$@"
done
finish "$@"
}

# pass2 OPS…: the stat of paths 1…np, what each one reads, its groups;
# then the next run's paths take the same numbers
pass2() {
stats 1 "$np" 1
q=1
while [ "$q" -le "$np" ]; do
  eval "act $q \$A$q"
  if [ -n "$yok" ]; then
    eval "sf=\$YF$q rb=\$YR$q"; nd1=$((nd + 1)); tko 100
    (eval "$tk $rb \"\$fp\" \"\$((sf + 1))\" \"\$((fz - sf))\"") </dev/null >"$t/d.$nd1" 2>"$t/g.$nd1"
    eval "dfr Y ok \"\$?\" = \"\$((fz - sf))\" \"\$YK$q\" \"\$t/d.\$nd1\" \"\$t/g.\$nd1\""
  fi
  q=$((q + 1))
done
groups
nw=0 nc=0 ne=0 np=0
}

# grp LETTER COUNT AGAIN CMD…: CMD -- (the paths of group LETTER; then
# /dev/null for N: tail heads every file), 200 a run: run R's output in
# $t/LETTER.R, its first and last member LETTER A/B R; AGAIN 1: each path
# stat'd again (O its first number)
grp() {
  g=$1 gn=$2 ga=$3; shift 3; gc=$* i=1 r=0
  while [ "$i" -le "$gn" ]; do
    r=$((r + 1)) j=$i
    set --
    while [ "$j" -le "$gn" ] && [ "$j" -lt "$((i + 200))" ]; do eval "o=\$$g$j"; eval "set -- \"\$@\" \"\$P$o\""; j=$((j + 1)); done
    [ "$g" = N ] && set -- "$@" /dev/null
    $gc -- "$@" >"$t/$g.$r" 2>/dev/null
    eval "${g}A$r=$i ${g}B$r=$((j - 1))"
    [ "$ga" = 1 ] && while [ "$i" -lt "$j" ]; do eval "o=\$$g$i"; eval "addp \"\$P$o\" 0"; eval "O$np=\$o"; i=$((i + 1)); done
    i=$j
  done
  eval "${g}R=$r"
}
# ent KIND STATUS A B C N1 N2 PATH: an entry of the next M record: a
# table of entries "KIND STATUS A B C N1 N2 PATH", each ended by a NUL,
# then their bytes one after another (N1 of the first file, N2 of the
# second); emit FILE…: the record, if it has an entry
: >"$t/mt"; pl=0 sum=0 nent=0
ent() {
  printf '%s %s %s %s %s %s %s %s\0' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" >>"$t/mt"
  pl=$((pl + ${#1} + ${#2} + ${#3} + ${#4} + ${#5} + ${#6} + ${#7} + ${#8} + 8)) sum=$((sum + $6 + $7)) nent=$((nent + 1))
}
emit() {
  if [ "$nent" -gt 0 ]; then
    printf '@M ok %s 0 0 %s %s\n' "$nent" "$pl" "$sum" >"$t/mh"
    printf '%s\n' "$k" >"$t/f"
    cat -- "$t/mh" "$t/mt" "$@" "$t/f"
  fi
  : >"$t/mt"; pl=0 sum=0 nent=0
}

# groups: a run's groups read (W, C, N), proved by a second stat of each
# file they read and of their outputs (S2, by the file's number), and
# answered: the counts as N records, the files read whole (per cat whose
# every file kept its size, else each read again here) and the ends (per
# tail: an "E S1 S2 PATH" entry a file, its sizes at the two stats, and
# one "T" of tail's output) in an M record
groups() {
n0=$np
grp W "$nw" 1 cat
grp C "$nc" 0 wc -lc
grp N "$ne" 1 tail -c 4096
i=1; while [ "$i" -le "$WR" ]; do addp "$t/W.$i" 0; eval "O$np=w$i"; i=$((i + 1)); done
i=1; while [ "$i" -le "$NR" ]; do addp "$t/N.$i" 0; eval "O$np=n$i"; i=$((i + 1)); done
[ "$np" -gt "$n0" ] && stats "$((n0 + 1))" "$np" 2
i=$((n0 + 1)); while [ "$i" -le "$np" ]; do eval "o=\$O$i"; eval "S2$o=\$U$i"; i=$((i + 1)); done
# the counts: a line of wc per file, in order (one it could not read has
# none); one whose size moved is counted again by itself
r=1
while [ "$r" -le "$CR" ]; do
  eval "j=\$CA$r b=\$CB$r"
  exec 3<"$t/C.$r"; have=
  while [ "$j" -le "$b" ]; do
    eval "o=\$C$j"; eval "fp=\$P$o fz=\$z$o"
    # "LINES BYTES NAME", the numbers right-aligned, cut by hand (exact names)
    [ -n "$have" ] || { IFS= read -r wn <&3 && have=1 && wn=${wn#"${wn%%[! ]*}"} && wl=${wn%% *} && wn=${wn#* } && wn=${wn#"${wn%%[! ]*}"} && wb=${wn%% *} && wn=${wn#* }; }
    if [ -n "$have" ] && [ "$wn" = "$fp" ] && [ "$wb" = "$fz" ]; then have=; hdr N ok 1 "$fz" "$wl" "$fp" 0; fin
    else
      [ -n "$have" ] && [ "$wn" = "$fp" ] && have=
      cntone "$fp" "$fz" 0
    fi
    j=$((j + 1))
  done
  exec 3<&-
  r=$((r + 1))
done
set --
r=1
while [ "$r" -le "$WR" ]; do
  eval "j=\$WA$r b=\$WB$r s2=\$S2w$r"
  a=$j ws=0; [ "$s2" -ge 0 ] || ws=-2
  while [ "$j" -le "$b" ]; do eval "o=\$W$j"; eval "fz=\$z$o f2=\$S2$o"; [ "$fz" = "$f2" ] || ws=-2; [ "$ws" -ge 0 ] && ws=$((ws + fz)); j=$((j + 1)); done
  j=$a
  while [ "$j" -le "$b" ]; do
    eval "o=\$W$j"; eval "fp=\$P$o fz=\$z$o"
    if [ "$ws" = "$s2" ]; then ent R ok 0 1 0 "$fz" 0 "$fp"; else rd "$fp" 0 "$fz" 1; fi
    j=$((j + 1))
  done
  [ "$ws" = "$s2" ] && set -- "$@" "$t/W.$r"
  r=$((r + 1))
done
r=1
while [ "$r" -le "$NR" ]; do
  # past a file under 4096 bytes whose size moved (its section's length
  # is not known: addEnds stops there), or with no size for tail's
  # output, each end is read by itself
  eval "j=\$NA$r b=\$NB$r tz=\$S2n$r"; lost=; [ "$tz" -ge 0 ] || lost=1
  while [ "$j" -le "$b" ]; do
    eval "o=\$N$j"; eval "fp=\$P$o fz=\$z$o f2=\$S2$o"
    if [ -n "$lost" ]; then endr "$fp" "$fz"
    else
      ent E ok "$fz" "$f2" 0 0 0 "$fp"
      [ "$fz" = "$f2" ] || { endr "$fp" "$fz"; [ "$fz" -lt 4096 ] && lost=1; }
    fi
    j=$((j + 1))
  done
  [ "$tz" -ge 0 ] && { ent T ok 0 0 0 "$tz" 0 -; set -- "$@" "$t/N.$r"; }
  r=$((r + 1))
done
emit "$@"
}

# finish OPS…: the commands' answers, the processes each holders' scan
# found, and every deferred record, sized by one more stat, in an M record
finish() {
if [ -n "$rp" ]; then
  wait "$rp"
  # a timeout that could not start it
  [ -e "$t/run" ] || eval "sh -c \"\$runner\" synthwatch-run \"\$t\" $ra"
fi
for i in $xs; do
  code=124; [ -s "$t/c.$i" ] && read -r code <"$t/c.$i"
  dfr X ok "$code" = 0 "$i" "$t/o.$i" "$t/x.$i"
done
# every process each scan found writing ("PID FD FLAGS TARGET"), but the
# one its worker.json named: one that only reads (a tail -f, a less, an
# SFTP read) is nobody's worker (Holder.Writes), and reading its
# cmdline, stat and cwd took 5 forks a poll
for sc in $scans; do
  seen=" ${sc#*:} "
  [ -s "$t/o.${sc%%:*}" ] && while read -r sp _ sfl _; do
    case $sp in *[!0-9]*|'') continue;; esac
    case $sfl in *[!0-7]*|'') ;; *) [ $((0$sfl & 3)) = 0 ] && continue;; esac
    case $seen in *" $sp "*) ;; *) seen="$seen$sp "; doproc "$sp";; esac
  done <"$t/o.${sc%%:*}"
done
np=0
i=1; while [ "$i" -le "$nd" ]; do eval "addp \"\$df$i\" 0; [ -n \"\$dg$i\" ] && addp \"\$dg$i\" 0"; i=$((i + 1)); done
[ "$np" -gt 0 ] && stats 1 "$np" 2
set --
n=0 i=1
while [ "$i" -le "$nd" ]; do
  n=$((n + 1)); eval "dz=\$U$n hb=\$db$i gz=0"
  eval "[ -n \"\$dg$i\" ]" && { n=$((n + 1)); eval "gz=\$U$n"; }
  # a file the second stat did not size is not sent: its entry says 0
  eval "df=\$df$i dg=\$dg$i"; [ "$dz" -ge 0 ] || dz=0 df=; [ "$gz" -ge 0 ] || gz=0 dg=
  case $hb in =) hb=$dz;; \?*) hb=$((dz < ${hb#?}));; esac
  eval "ent \"\$dk$i\" \"\$ds$i\" \"\$da$i\" \"\$hb\" \"\$dc$i\" \"\$dz\" \"\$gz\" \"\$dp$i\""
  [ -n "$df" ] && set -- "$@" "$df"; [ -n "$dg" ] && set -- "$@" "$dg"
  i=$((i + 1))
done
emit "$@"
}

# the main: "@H NONCE" first: what a login shell printed before it, newline
# or not, is cut there. The records follow gzip'd where gzip is ("@Z NONCE"
# says so; gzip compresses as the body writes): a cold poll is mostly log
# text, which SSH carries as it is. The first, U, says whether base64 and
# gzip are here (A 1): the next poll's command may then come packed
# (execchan.go's PackCommand), whole on the line.
printf '@H %s\n' "$k"
if [ $# -gt 0 ] && command -v gzip >/dev/null 2>&1; then printf '@Z %s\n' "$k"; body "$@" | gzip -1
else body "$@"; fi
[ -s "$t/rc" ] && { read -r rc <"$t/rc"; exit "$rc"; }
exit 0
