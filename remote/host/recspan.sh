# shellcheck shell=sh disable=SC2317 # st is called through eval
# recspan.sh MARK MAX AGE DIR NAME [CAT...]: the fallback's answer to the
# records' times (remote/recspan.go; the Go agent answers the same exec in
# Go, with figures, never bytes). For each DIR/CAT/NAME (every DIR/*/NAME
# with no CAT) modified less than AGE seconds ago: "@B CUT CAT" (CUT 1: the
# bytes begin mid-file), its last MAX bytes (4 MAX where MAX holds fewer
# than 3 whole records: long completions), then a line of MARK. POSIX sh:
# it cannot parse JSON, so the laptop reads the bytes (parse.TailRecordSpan).
# One stat per 100 files, not one each (a fork costs milliseconds on a
# busy host), and only the files written lately are read.
mark=$1 max=$2 age=$3 dir=$4 name=$5; shift 5
nl='
'
g=; [ $# -gt 0 ] || { set -- "$dir"/*/"$name"; g=1; }
# st ITEM…: "MTIME SIZE PATH" of each one's file (ITEM a CAT, or with g a
# path of the glob; a name with a newline is left out: stat's answer is
# lines)
st() {
  k=$#
  for c do
    [ -n "$g" ] || c=$dir/$c/$name
    case $c in *"$nl"*) ;; *) set -- "$@" "$c";; esac
  done
  shift "$k"
  [ $# -gt 0 ] && stat -L -c '%Y %s %n' -- "$@" 2>/dev/null
}
now=$(date +%s)
# the items 100 at a time: a list grown a word at a time costs its square
while [ $# -gt 0 ]; do
  n=$#; [ "$n" -gt 100 ] && n=100
  r=; i=1; while [ "$i" -le "$n" ]; do r="$r \"\${$i}\""; i=$((i + 1)); done
  eval "st $r"
  shift "$n"
done | while IFS= read -r l; do
  m=${l%% *} l=${l#* }; z=${l%% *} f=${l#* }
  case $m$z in *[!0-9]*|'') continue;; esac
  if [ $((now - m)) -ge "$age" ] || [ ! -f "$f" ]; then continue; fi
  c=${f%/*}; c=${c##*/}
  # the bytes in a variable, counted there: one tail a file, not a tail, a
  # wc and a tail again (the x keeps their last newlines)
  n=$max
  { b=$(tail -c "$n" -- "$f"; echo x); } 2>/dev/null; b=${b%x}
  # fewer than 3 newlines, as wc -l counts them (parse.RecordTailLines,
  # RecordTailGrow): long completions, 4 MAX
  case $b in *"$nl"*"$nl"*"$nl"*) ;; *) n=$((max * 4)); { b=$(tail -c "$n" -- "$f"; echo x); } 2>/dev/null; b=${b%x};; esac
  cut=0; [ "$z" -le "$n" ] || cut=1
  printf '@B %s %s\n%s\n%s\n' "$cut" "$c" "$b" "$mark"
done
exit 0
