# shellcheck shell=sh
# recspan.sh MARK MAX AGE DIR NAME [CAT...]: the fallback's answer to the
# records' times (remote/recspan.go; the Go agent answers the same exec in
# Go, with figures, never bytes). For each DIR/CAT/NAME (every DIR/*/NAME
# with no CAT) modified less than AGE seconds ago: "@B CUT CAT" (CUT 1: the
# bytes begin mid-file), its last MAX bytes (4 MAX where MAX holds fewer
# than 3 whole records: long completions), then a line of MARK. POSIX sh:
# it cannot parse JSON, so the laptop reads the bytes (parse.TailRecordSpan).
mark=$1 max=$2 age=$3 dir=$4 name=$5; shift 5
now=$(date +%s)
one() {
  case $1 in *'
'*|'') return 0;; esac
  f=$dir/$1/$name
  [ -f "$f" ] || return 0
  s=$(stat -L -c '%s %Y' -- "$f" 2>/dev/null) || return 0
  z=${s% *} m=${s#* }
  [ $((now - m)) -lt "$age" ] || return 0
  n=$max
  [ "$(tail -c "$n" -- "$f" 2>/dev/null | wc -l)" -ge 3 ] || n=$((max * 4)) # parse.RecordTailLines, RecordTailGrow
  cut=0; [ "$z" -le "$n" ] || cut=1
  printf '@B %s %s\n' "$cut" "$1"
  tail -c "$n" -- "$f" 2>/dev/null
  printf '\n%s\n' "$mark"
}
if [ $# -eq 0 ]; then
  for f in "$dir"/*/"$name"; do
    [ -f "$f" ] || continue
    c=${f%/*}; one "${c##*/}"
  done
else
  for c in "$@"; do one "$c"; done
fi
