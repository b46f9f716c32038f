# shellcheck shell=sh disable=SC2154 # where.sh sets ab, ad, os, arch, gz, sum, proto
# installed.sh (after where.sh and loose.sh): run the installed agent when it is
# there and safe, as "@A NONCE refused MODE UID PATH" when it is not safe,
# "@A NONCE missing GZ SUM OS ARCH DIR" when it is not there; the launcher
# goes on to the deployed binary, or ends (the poll reads by fallback.sh).
# $1 the nonce, $4 the first request (base64 of its frame) or "".

if [ -e "$ab" ] || [ -L "$ab" ]; then
	if loose "$ab"; then
		printf '@A %s refused %s\n' "$1" "$(printf %s "$bad" | tr '\n' '?')"
	else
		exec "$ab" agent --serve "$proto" --skip 0 "$1" "$4"
	fi
else
	printf '@A %s missing %s %s %s %s %s\n' "$1" "$gz" "$sum" "$os" "$arch" "$(printf %s "$ad" | tr '\n' '?')"
fi
