package parse

import "strings"

// Redacted is the password's stand-in, as Go's HTTP client writes it in
// its errors ("http://user:***@host").
const Redacted = "***"

// Redact hides the password of every URL in s: "http://admin:pw@host/x"
// becomes "http://admin:***@host/x". A server URL may carry basic-auth
// credentials (a gateway in front of SGLang); the worker uses them, but
// every log line, state file, view, event and notification shows this
// form. Text with no "://" and "@" is returned as it is; Redact(Redact(s))
// equals Redact(s).
func Redact(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	return string(redact(nil, []byte(s)))
}

// redact appends src to dst with each URL's password replaced.
func redact(dst, src []byte) []byte {
	for {
		i := strings.Index(string(src), "://")
		if i < 0 {
			return append(dst, src...)
		}
		auth := i + 3
		end := auth
		for end < len(src) && !endsAuthority(src[end]) {
			end++
		}
		dst = append(dst, src[:auth]...)
		a := src[auth:end]
		if at := strings.LastIndexByte(string(a), '@'); at > 0 {
			if colon := strings.IndexByte(string(a[:at]), ':'); colon >= 0 {
				dst = append(dst, a[:colon+1]...)
				dst = append(dst, Redacted...)
				a = a[at:]
			}
		}
		dst = append(dst, a...)
		src = src[end:]
	}
}

// endsAuthority is a byte that cannot be in a URL's user:password@host.
func endsAuthority(c byte) bool {
	return c <= ' ' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' || c >= 0x7f
}
