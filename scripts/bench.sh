#!/usr/bin/env bash
# Whole-process and side-by-side figures for docs/BENCHMARKS.md. Every
# benchmark runs COUNT times (default 5) and the median is reported, with the
# machine and the date. Long ones run fewer times (dead link with defaults,
# 45 s: once; idle CPU, 60 s: 3 times; the load sim's: once). Usage: scripts/bench.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/sbin"
COUNT=${1:-5}

need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v tmux >/dev/null || need+=(tmux)
command -v hey >/dev/null || need+=(hey)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
bench() { # package, pattern, benchtime, count
  go test "$1" -run '^$' -bench "$2" -benchtime "$3" -count "$4" -timeout 90m | grep '^Benchmark' | tee -a "$raw"
}
bench ./parse 'Split|Sanitize|ParseSGLangLog$|ParseWorkerLog' 1s "$COUNT"
bench ./parse ParseVsGrep 1x "$COUNT"
bench ./parse RecordHead 1s "$COUNT"
bench ./worker 'WorkerVsHey|ResumeScan|WorkerPeakRSS|Generate' 1x "$COUNT"
# the load sim's benchmarks run in sim time (25–60 s a run): once, and the
# adaptive window's sweep on three servers of the load family only (the
# whole family, seven servers, is about 20 minutes: see docs/BENCHMARKS.md)
SW_BENCH_SHAPES=night-long,night-short,big-pool-short bench ./worker AdaptiveWindow 1x 1
bench ./worker WorkerInvisible 1x 1
bench ./remote 'IdlePoll|GrownPoll' 20x "$COUNT"
bench ./remote 'ColdStart2GB|PollVsHabit' 1x "$COUNT"
bench ./remote DeadLink 1x 1
bench ./remote 'ColdPoll10k' 1x 1
SW_E2E=1 bench ./pipeline 'FirstScreen10k' 1x 1
bench ./pipeline 'WatcherIdlePoll|VitalsRead|WatcherGrowingPoll' 20x "$COUNT"
bench ./pipeline 'ColdStatus' 1x 3
bench ./pipeline 'Wake' 3x 1
bench ./pipeline 'NightBytes' 100x 3
bench ./tui . 1x "$COUNT"
bench ./cmd/synthwatch 'StatusCommandVsHabit' 5x 1
bench ./cmd/synthwatch 'KeyLatencyBlackholed' 20x 3
bench ./cmd/synthwatch 'ReportBytes' 1x 1
bench ./cmd/synthwatch 'IdleCPU|NightCPU' 1x 3
SW_E2E=1 bench ./cmd/synthwatch 'Fleet16$' 1x 3
SW_E2E=1 bench ./cmd/synthwatch Fleet16Shell 1x 1

out=docs/BENCHMARKS.md
# The hand-written headlines (from "## Headlines" to the table) are kept.
headlines=$(awk '/^## Headlines/{p=1} /^## The table/{p=0} p' "$out" 2>/dev/null || true)
{
  echo "# Benchmarks"
  echo
  echo "Made by \`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) cores,"
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB,"
  echo "$(go version | cut -d' ' -f3), $(uname -sr). Each figure is the median of the runs shown."
  echo "Everything runs on loopback: a real OpenSSH sshd, the sim server, the real worker binary."
  echo "What each benchmark measures is in its doc comment (\`go doc\` or the *_test.go file)."
  echo
  if [ -n "$headlines" ]; then echo "$headlines"; echo; echo "## The table"; echo; fi
  echo "| benchmark | metric | median | runs |"
  echo "| --- | --- | --- | --- |"
  awk '
    { name=$1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
      for (i = 3; i < NF; i += 2) { key = name SUBSEP $(i+1); vals[key] = vals[key] " " $i; if (!(key in order)) { order[key] = ++n; keys[n] = key } } }
    END {
      for (k = 1; k <= n; k++) {
        key = keys[k]; c = split(substr(vals[key], 2), v, " ")
        for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
        med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
        split(key, p, SUBSEP); printf "| %s | %s | %.4g | %d |\n", p[1], p[2], med, c
      }
    }' "$raw"
  echo
  echo "## Cold start against the habit"
  echo
  echo "\`synthwatch status\` from nothing (the SSH handshake and the first Snapshot of a running job's"
  echo "root) next to the users' \`ssh host 'tail …; wc -l …'\` (OpenSSH's client) on the same link, a"
  echo "loopback proxy adding the RTT (BenchmarkColdStatus; medians of 3). RTTs is the wall time over the RTT."
  echo
  echo "| RTT | status (s) | status (RTTs) | habit (s) | habit (RTTs) | status / habit |"
  echo "| --- | --- | --- | --- | --- | --- |"
  awk '/^BenchmarkColdStatus\// {
      rtt = $1; sub(/^BenchmarkColdStatus\/rtt=/, "", rtt); sub(/-[0-9]+$/, "", rtt)
      for (i = 3; i < NF; i += 2) { v[rtt, $(i+1)] = v[rtt, $(i+1)] " " $i }
      if (!(rtt in seen)) { seen[rtt] = 1; order[++n] = rtt } }
    function med(s,   a, c, i, j, t) { c = split(substr(s, 2), a, " "); if (c == 0) return "-"
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return sprintf("%.3g", (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2) }
    END { for (k = 1; k <= n; k++) { r = order[k]
      printf "| %s | %s | %s | %s | %s | %s |\n", r, med(v[r, "s"]), med(v[r, "RTTs"]), med(v[r, "habit_s"]), med(v[r, "habit_RTTs"]), med(v[r, "x_habit"]) } }' "$raw"
} > "$out"
echo "wrote $out"
