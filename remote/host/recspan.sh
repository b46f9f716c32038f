# shellcheck shell=sh
# recspan.sh MARK MAX AGE DIR NAME [CAT...]: the fallback's answer to the
# records' times (remote/recspan.go; the Go agent answers the same exec in
# Go, with figures, never bytes). For each DIR/CAT/NAME (every DIR/*/NAME
# with no CAT) modified less than AGE seconds ago: "@B CUT CAT" (CUT 1: the
# bytes begin mid-file), its last MAX bytes (4 MAX where MAX holds fewer
# than 3 whole records: long completions), then a line of MARK. POSIX sh:
# it cannot parse JSON, so the laptop reads the bytes (parse.TailRecordSpan).
# One stat for every file, not one each: a fork costs milliseconds on a
# busy host, and only the files written lately are read.
mark=$1 max=$2 age=$3 dir=$4 name=$5; shift 5
nl='
'
[ $# -gt 0 ] || for f in "$dir"/*/"$name"; do [ -f "$f" ] && { c=${f%/*}; set -- "$@" "${c##*/}"; }; done
# st CAT...: "MTIME SIZE PATH" of each one's file (a name with a newline
# is left out: stat's answer is lines)
st() {
  k=$#
  for c do case $c in *"$nl"*|'') ;; *) set -- "$@" "$dir/$c/$name";; esac; done
  shift "$k"
  [ $# -gt 0 ] && stat -L -c '%Y %s %n' -- "$@" 2>/dev/null
}
now=$(date +%s)
st "$@" | while read -r m z f; do
  case $m$z in *[!0-9]*|'') continue;; esac
  if [ $((now - m)) -ge "$age" ] || [ ! -f "$f" ]; then continue; fi
  c=${f%/*}; c=${c##*/}
  n=$max
  [ "$(tail -c "$n" -- "$f" 2>/dev/null | wc -l)" -ge 3 ] || n=$((max * 4)) # parse.RecordTailLines, RecordTailGrow
  cut=0; [ "$z" -le "$n" ] || cut=1
  printf '@B %s %s\n' "$cut" "$c"
  tail -c "$n" -- "$f" 2>/dev/null
  printf '\n%s\n' "$mark"
done
exit 0
