# shellcheck shell=sh
# count.sh FILE FROM N [FILE FROM N...]: the newlines in each FILE's N
# bytes from byte FROM (1 is the first), all files at once (remote/count.go),
# as "I COUNT SIZE" (I the file's place, from 1; the count is exact at
# SIZE) or "I ! REASON". A whole file (FROM 1) is read by wc directly,
# bracketed by two stats; if its size moved in between, the bounded pipe
# is used instead. The pipe's byte count must be N, so a tail that failed
# (no pipefail in sh) is an error, not 0 lines.
i=0
while [ $# -ge 3 ]; do
  i=$((i+1))
  (
    f=$1 from=$2 n=$3
    if [ "$from" = 1 ]; then
      s1=$(stat -L -c %s -- "$f") && c=$(wc -l < "$f") && s2=$(stat -L -c %s -- "$f") &&
        [ "$s1" = "$s2" ] && { echo "$i $c $s1"; exit 0; }
    fi
    # shellcheck disable=SC2046 # wc's two numbers, split on purpose
    set -- $(tail -c +"$from" -- "$f" | head -c "$n" | wc -lc)
    if [ "$#" = 2 ] && [ "$2" = "$n" ]; then
      echo "$i $1 $((from - 1 + n))"
    else
      echo "$i ! read ${2:-0} of $n bytes from byte $from"
    fi
  ) &
  shift 3
done
wait
