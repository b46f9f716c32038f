# shellcheck shell=sh
# deployed.sh (after where.sh, loose.sh and installed.sh, in the launcher):
# with no installed agent, run the deployed binary as the agent when it
# speaks the protocol, else say "@A NONCE mismatch GOT BIN" and end (the
# poll reads by fallback.sh). $1 the nonce, $2 the binary (--worker-bin;
# "" for synthwatch on PATH, else ~/.local/bin/synthwatch; "-" for none),
# $3 the protocol, $4 the first request (base64 of its frame) or "".
k=$1 bin=$2 proto=$3
if [ -z "$bin" ]; then bin=$(command -v synthwatch 2>/dev/null) || bin="$HOME/.local/bin/synthwatch"; fi
# a binary that hangs on the question (a hung mount, a wrapper that waits)
# is given 10 s where timeout(1) is there
to=; command -v timeout >/dev/null 2>&1 && to="timeout 10"
if [ "$bin" != - ] && [ -f "$bin" ] && [ -x "$bin" ]; then
  got=$($to "$bin" agent --proto </dev/null 2>/dev/null)
  [ "$got" = "$proto" ] && exec "$bin" agent --serve "$proto" --skip 0 "$k" "$4"
  printf '@A %s mismatch %.64s %s\n' "$k" "$(printf %s "$got" | tr -c 'A-Za-z0-9./_-' '?')" "$(printf %s "$bin" | tr '\n' '?')"
fi
