package remote

import (
	"fmt"
	"strings"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// isWord says whether an argument is sent as itself: 1 to 64 of
// [A-Za-z0-9_.,:=+-], a plain word (an op's name, a flag). (A loop, not a
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
// that, a host program the agent carries by its name (progs) where the
// agent's hello, or the hint's of it, named this build's programs, each op
// shape once (Shapes), and a steady poll's request is its ops' numbers
// (Calls).
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
			case a.progs && progNames()[s] != "":
				n := progNames()[s]
				tmpl.WriteString("@" + n)
				sh.Args = append(sh.Args, agentproto.Arg{Prog: n})
				req.Progs = progsDigest()
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

// encode is plan written as the Go agent's next frame.
func (a *Agent) encode(b *Batch) []byte {
	f, err := a.fw.Frame(a.plan(b))
	if err != nil {
		return nil // over the bound: the exchange fails on the empty request
	}
	return f
}
