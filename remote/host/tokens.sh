# shellcheck shell=sh
# tokens.sh FILE FROM N [FILE FROM N...]: the records' completion tokens
# summed and counted per run over N bytes of each FILE from byte FROM (1
# is the first), all files in one exec (pipeline/tokens_host.go), in awk
# (POSIX: no gawk extensions). Per range, "I T records tokens bytes
# unknown" (I the range's place, from 1), and "I R records tokens unknown
# run" per run; bytes reach the end of the last whole line. A record is a
# line that starts with '{', ends with '}' and has an "id" key
# (parse.ParseRecordHead decides for bytes read here); its tokens are the
# first "completion_tokens" key whose value is a whole count (a number or
# a string of one, below 1e18), its run the first "run" key's string: what
# every writer seen so far puts at the top level (see
# TestTokenSumMatchesFullDecode). A record with no such key (null,
# missing, "n/a", 12.5) is unknown: counted apart, as parse's HasTokens
# false is. The Go agent answers the same exec by its name,
# synthwatch-tokens (remote/tokensum.go).
i=0
while [ $# -ge 3 ]; do
  i=$((i+1))
  # from the first byte, head alone: a tail in front copies every byte once more.
  # A "." follows the range: the last line awk reads is never a whole line of it
  # (the "." alone, or an unterminated line with the "." on its end) and is left.
  { if [ "$2" = 1 ]; then head -c "$3" -- "$1"; else tail -c +"$2" -- "$1" | head -c "$3"; fi; printf .; } | LC_ALL=C awk -v i="$i" '
function take(s, re) { if (match(s, re)) return substr(s, RSTART, RLENGTH); return "" }
function one(line,   tok, unk, run, v, x) {
  b += length(line) + 1
  sub(/\r$/, "", line)
  if (line !~ /^[ \t]*(\357\273\277)?[ \t]*\{.*\}[ \t]*$/ || line !~ /"id"[ \t]*:/ || line ~ /"id"[ \t]*:[ \t]*null/) return
  tok = 0; unk = 1; run = ""
  v = take(line, "\"completion_tokens\"[ \t]*:[ \t]*(\"[0-9][0-9.eE+]*\"|[0-9][0-9.eE+]*[ \t]*[,}])")
  if (v != "") { sub(/^"completion_tokens"[ \t]*:[ \t]*"?/, "", v); x = v + 0; if (x == int(x) && x < 1e18) { tok = x; unk = 0 } }
  v = take(line, "\"run\"[ \t]*:[ \t]*\"[^\"\\\\]*\"")
  if (v != "") { sub(/^"run"[ \t]*:[ \t]*"/, "", v); run = substr(v, 1, length(v) - 1) }
  recs++; toks += tok; unks += unk; rr[run]++; rt[run] += tok; ru[run] += unk
}
NR > 1 { one(prev) }
{ prev = $0 }
END {
  printf "%d T %d %.0f %d %d\n", i, recs, toks, b, unks
  for (r in rr) printf "%d R %d %.0f %d %s\n", i, rr[r], rt[r], ru[r], r
}' || echo "$i ! sum failed"
  shift 3
done
