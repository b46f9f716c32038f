# shellcheck shell=sh
# kill.sh PID GRACE LOG START NOTE FMT MARK: stop the worker PID
# (pipeline/actions.go). It leaves the kill note NOTE (printf FMT PID START
# NOW, parse.KillNoteFormat; written whole: a temporary file renamed) and
# the line MARK in the worker log LOG, then sends SIGTERM to the worker's
# process group, waits up to GRACE seconds for it to go, then sends
# SIGKILL. It prints "gone" or "killed".
pid=$1; grace=$2; log=$3; start=$4; note=$5; fmt=$6; mark=$7
mkdir -p -- "${note%/*}" 2>/dev/null
tmp="$note.$$.tmp"
# shellcheck disable=SC2059 # fmt is the note's format, ours
if printf "$fmt" "$pid" "$start" "$(date +%s)" > "$tmp" 2>/dev/null; then mv -f -- "$tmp" "$note" 2>/dev/null; fi
rm -f -- "$tmp" 2>/dev/null
[ -f "$log" ] && [ ! -L "$log" ] && [ -O "$log" ] && printf '%s\n' "$mark" >> "$log" 2>/dev/null
kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || { echo gone; exit 0; }
i=0
while kill -0 "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null; do
  if [ "$i" -ge "$((grace * 10))" ]; then
    kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
    sleep 0.2
    echo killed
    exit 0
  fi
  sleep 0.1; i=$((i + 1))
done
echo gone
