package remote

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// isWord says whether an argument is sent as itself: 1 to 64 of
// [A-Za-z0-9_.,:=+-], nothing in it means anything to sh. (A loop, not a
// regexp: every argument of every poll passes here.)
func isWord(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.,:=+-", c) >= 0) {
			return false
		}
	}
	return true
}

// isNumber says whether an argument changes from poll to poll (an offset,
// a size, -?[0-9]+): an op's answer is kept under its other arguments.
func isNumber(s string) bool {
	return allDigits(strings.TrimPrefix(s, "-"))
}

// plan writes b as the agent's next request: each string that is not a
// plain word is sent once a session (Strings) and named by number after
// that, each op shape once (Shapes), and a steady poll's request is its
// ops' numbers (Calls).
func (a *Agent) plan(b *Batch) agentproto.Request {
	var req agentproto.Request
	var tmpl strings.Builder
	for i, start := range b.ops {
		end := len(b.args)
		if i+1 < len(b.ops) {
			end = b.ops[i+1]
		}
		op := b.args[start:end]
		tmpl.Reset()
		tmpl.WriteString(op[0])
		sh := agentproto.Shape{Name: op[0]}
		var nums []string
		for _, s := range op[1:] {
			tmpl.WriteByte(' ')
			switch {
			case isNumber(s):
				tmpl.WriteByte('%')
				nums = append(nums, s)
				sh.Args = append(sh.Args, agentproto.Arg{Num: true})
			case isWord(s):
				tmpl.WriteString(s)
				sh.Args = append(sh.Args, agentproto.Arg{Lit: s})
			default:
				n, ok := a.alias[s]
				if !ok {
					n = len(a.alias)
					a.alias[s] = n
					a.names = append(a.names, s)
					req.Strings = append(req.Strings, s)
				}
				fmt.Fprintf(&tmpl, "#%d", n)
				sh.Args = append(sh.Args, agentproto.Arg{Ref: n + 1})
			}
		}
		k, ok := a.keys[tmpl.String()]
		if !ok {
			k = len(a.keys)
			a.keys[tmpl.String()] = k
			sh.Key = k
			req.Shapes = append(req.Shapes, sh)
		}
		req.Calls = append(req.Calls, agentproto.Call{Key: k, Nums: nums})
	}
	return req
}

// shellText writes req as the shell agent reads it: a "D N =TEXT" line
// for each new string (TEXT escaped for printf %b), a "T KEY OP TOK…"
// line for each new shape (TOK a word, #N or %, a number to come), then
// one "R | KEY NUM… | KEY NUM…" line; an "L LEN" line first, LEN the
// bytes of the rest. base is the number of the first new string.
func shellText(req agentproto.Request, base int) []byte {
	var decl bytes.Buffer
	for i, s := range req.Strings {
		fmt.Fprintf(&decl, "D %d =%s\n", base+i, printfEscape(s))
	}
	for _, sh := range req.Shapes {
		fmt.Fprintf(&decl, "T %d %s", sh.Key, sh.Name)
		for _, x := range sh.Args {
			switch {
			case x.Num:
				decl.WriteString(" %")
			case x.Ref > 0:
				fmt.Fprintf(&decl, " #%d", x.Ref-1)
			default:
				decl.WriteString(" " + x.Lit)
			}
		}
		decl.WriteByte('\n')
	}
	decl.WriteString("R")
	for _, c := range req.Calls {
		fmt.Fprintf(&decl, " | %d", c.Key)
		for _, n := range c.Nums {
			decl.WriteString(" " + n)
		}
	}
	decl.WriteByte('\n')
	// framed by its length: the shell takes it whole (head -c), not a byte a read
	return append(fmt.Appendf(nil, "L %d\n", decl.Len()), decl.Bytes()...)
}

// encode is plan written for the agent that runs: a frame for the Go
// agent, the shell agent's text otherwise.
func (a *Agent) encode(b *Batch) []byte {
	base := len(a.names)
	req := a.plan(b)
	if a.fw != nil {
		f, err := a.fw.Frame(req)
		if err != nil {
			return nil // over the bound: the exchange fails on the empty request
		}
		return f
	}
	return shellText(req, base)
}

// printfEscape writes s for printf %b: every byte but printable ASCII
// and the space as \0ooo, and of those the backslash (printf %b's escape)
// and the single quote (the shell agent quotes each string in one:
// planAwk's quoted). A "D N =TEXT" line's text is the rest of the line,
// spaces and all. A script takes about its own length, not five times
// it: the first request travels on the exec's command line when it fits.
func printfEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c < 0x7f && c != '\\' && c != '\'' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\0%03o`, c)
		}
	}
	return b.String()
}
