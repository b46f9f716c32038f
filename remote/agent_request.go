package remote

import (
	"strconv"
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
	req.Calls = make([]agentproto.Call, 0, len(b.ops))
	// the calls' numbers share one array, and an op's shape is written
	// out only when it is new: a steady poll of 50,000 categories plans
	// 150,000 ops, nearly all of them shapes it has sent before
	nums := make([]string, 0, len(b.args))
	var tmpl []byte
	for i, start := range b.ops {
		end := len(b.args)
		if i+1 < len(b.ops) {
			end = b.ops[i+1]
		}
		op := b.args[start:end]
		tmpl = append(tmpl[:0], op[0]...)
		n0 := len(nums)
		for _, s := range op[1:] {
			tmpl = append(tmpl, ' ')
			switch {
			case isNumber(s):
				tmpl = append(tmpl, '%')
				nums = append(nums, s)
			case isWord(s):
				tmpl = append(tmpl, s...)
			case a.progs && progNames()[s] != "":
				tmpl = append(append(tmpl, '@'), progNames()[s]...)
				req.Progs = progsDigest()
			default:
				n, ok := a.alias[s]
				if !ok {
					n = len(a.alias)
					a.alias[s] = n
					a.names = append(a.names, s)
					req.Strings = append(req.Strings, s)
				}
				tmpl = strconv.AppendInt(append(tmpl, '#'), int64(n), 10)
			}
		}
		k, ok := a.keys[string(tmpl)]
		if !ok {
			k = len(a.keys)
			a.keys[string(tmpl)] = k
			req.Shapes = append(req.Shapes, a.shape(k, op))
		}
		var cn []string
		if len(nums) > n0 {
			cn = nums[n0:len(nums):len(nums)]
		}
		req.Calls = append(req.Calls, agentproto.Call{Key: k, Nums: cn})
	}
	return req
}

// shape is op's Shape under key k, its strings' aliases made by plan.
func (a *Agent) shape(k int, op []string) agentproto.Shape {
	sh := agentproto.Shape{Key: k, Name: op[0], Args: make([]agentproto.Arg, 0, len(op)-1)}
	for _, s := range op[1:] {
		switch {
		case isNumber(s):
			sh.Args = append(sh.Args, agentproto.Arg{Num: true})
		case isWord(s):
			sh.Args = append(sh.Args, agentproto.Arg{Lit: s})
		case a.progs && progNames()[s] != "":
			sh.Args = append(sh.Args, agentproto.Arg{Prog: progNames()[s]})
		default:
			sh.Args = append(sh.Args, agentproto.Arg{Ref: a.alias[s] + 1})
		}
	}
	return sh
}

// encode is plan written as the Go agent's next frame.
func (a *Agent) encode(b *Batch) []byte {
	f, err := a.fw.Frame(a.plan(b))
	if err != nil {
		return nil // over the bound: the exchange fails on the empty request
	}
	return f
}
