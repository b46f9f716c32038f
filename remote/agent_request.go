package remote

import (
	"slices"
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
	// the calls' numbers share one array, and an op's shape is copied out
	// only when it is new: a steady poll of 50,000 categories plans
	// 150,000 ops, nearly all of them shapes it has sent before
	nums := make([]string, 0, len(b.args))
	var tmpl []byte
	var args []agentproto.Arg
	for i, start := range b.ops {
		end := len(b.args)
		if i+1 < len(b.ops) {
			end = b.ops[i+1]
		}
		op := b.args[start:end]
		tmpl, args = append(tmpl[:0], op[0]...), args[:0]
		n0 := len(nums)
		for _, s := range op[1:] {
			arg := a.arg(s, &req)
			args = append(args, arg)
			tmpl = append(tmpl, ' ')
			switch {
			case arg.Num:
				tmpl = append(tmpl, '%')
				nums = append(nums, s)
			case arg.Prog != "":
				tmpl = append(append(tmpl, '@'), arg.Prog...)
			case arg.Ref > 0:
				tmpl = strconv.AppendInt(append(tmpl, '#'), int64(arg.Ref-1), 10)
			default:
				tmpl = append(tmpl, arg.Lit...)
			}
		}
		k, ok := a.keys[string(tmpl)]
		if !ok {
			k = len(a.keys)
			a.keys[string(tmpl)] = k
			req.Shapes = append(req.Shapes, agentproto.Shape{Key: k, Name: op[0], Args: slices.Clone(args)})
		}
		var cn []string
		if len(nums) > n0 {
			cn = nums[n0:len(nums):len(nums)]
		}
		req.Calls = append(req.Calls, agentproto.Call{Key: k, Nums: cn})
	}
	return req
}

// arg is what s is in a shape: a number the call fills in, a plain word,
// a host program by name (req then carries the digest), or a string by
// its alias, sent in req the first time.
func (a *Agent) arg(s string, req *agentproto.Request) agentproto.Arg {
	switch {
	case isNumber(s):
		return agentproto.Arg{Num: true}
	case isWord(s):
		return agentproto.Arg{Lit: s}
	case a.progs && progNames()[s] != "":
		req.Progs = progsDigest()
		return agentproto.Arg{Prog: progNames()[s]}
	}
	n, ok := a.alias[s]
	if !ok {
		n = len(a.alias)
		a.alias[s] = n
		a.names = append(a.names, s)
		req.Strings = append(req.Strings, s)
	}
	return agentproto.Arg{Ref: n + 1}
}

// encode is plan written as the Go agent's next frame.
func (a *Agent) encode(b *Batch) []byte {
	f, err := a.fw.Frame(a.plan(b))
	if err != nil {
		return nil // over the bound: the exchange fails on the empty request
	}
	return f
}
