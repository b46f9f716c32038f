package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
)

func TestParseRecordHead(t *testing.T) {
	cases := []struct {
		name   string
		line   string
		key    string // "" with err
		id     string
		tokens int64
		has    bool
		err    bool
	}{
		{"worker record", `{"id":"a1","category":"B1","run":"r","prompt_tokens":5,"completion_tokens":217,"content":"x"}`, `"a1"`, `"a1"`, 217, true, false},
		{"int id", `{"id":42,"category":"B1","completion_tokens":3}`, `42e0`, `42`, 3, true, false},
		{"escaped quote", `{"id":"q\"uote","completion_tokens":9}`, `"q\"uote"`, `"q\"uote"`, 9, true, false},
		{"marker inside a string", `{"id":"x","category":"a,\"completion_tokens\":5","completion_tokens":8}`, `"x"`, `"x"`, 8, true, false},
		{"no tokens", `{"id":7}`, `7e0`, `7`, 0, false, false},
		{"id late, spaces", `{"prompt":"p","id": "late" ,"completion_tokens": 12}`, `"late"`, `"late"`, 12, true, false},
		// finding 2/3: Python json.dumps shapes and escapes
		{"python spacing", `{"id": "x", "completion_tokens": 4}`, `"x"`, `"x"`, 4, true, false},
		{"tab after colon", "{\"id\":\t\"p1\",\"completion_tokens\":1}", `"p1"`, `"p1"`, 1, true, false},
		{"space after number", `{"id":7 ,"completion_tokens":1}`, `7e0`, `7`, 1, true, false},
		{"ensure_ascii", `{"id": "\u00e9t\u00e9-0"}`, `"été-0"`, `"\u00e9t\u00e9-0"`, 0, false, false},
		{"escaped slash", `{"id":"a\/b"}`, `"a/b"`, `"a\/b"`, 0, false, false},
		{"html escape", `{"id":"\u0026\u003c"}`, `"&<"`, `"\u0026\u003c"`, 0, false, false},
		{"float id", `{"id":7.0}`, `7e0`, `7.0`, 0, false, false},
		{"exp id", `{"id":7e0}`, `7e0`, `7e0`, 0, false, false},
		{"huge int", `{"id":10000000000000000000000000}`, `1e25`, `10000000000000000000000000`, 0, false, false},
		{"huge int +1", `{"id":10000000000000000000000001}`, `10000000000000000000000001e0`, `10000000000000000000000001`, 0, false, false},
		{"string seven", `{"id":"7"}`, `"7"`, `"7"`, 0, false, false},
		{"negative zero", `{"id":-0.0}`, `0`, `-0.0`, 0, false, false},
		// finding 4: float or string completion_tokens
		{"float tokens", `{"category":"A","id":"p","completion_tokens":100.0}`, `"p"`, `"p"`, 100, true, false},
		{"string tokens", `{"category":"A","id":"p","completion_tokens":"100"}`, `"p"`, `"p"`, 100, true, false},
		{"exp tokens", `{"id":"p","completion_tokens":1e2}`, `"p"`, `"p"`, 100, true, false},
		{"fractional tokens ignored", `{"id":"p","completion_tokens":1.5}`, `"p"`, `"p"`, 0, false, false},
		{"object tokens ignored", `{"id":"p","completion_tokens":{"n":1}}`, `"p"`, `"p"`, 0, false, false},
		{"null tokens, usage", `{"id":"p","completion_tokens":null,"usage":{"completion_tokens":7}}`, `"p"`, `"p"`, 7, true, false},
		{"meta_info tokens", `{"id":"p","meta_info":{"completion_tokens":"9"}}`, `"p"`, `"p"`, 9, true, false},
		{"negative tokens ignored", `{"id":"p","completion_tokens":-3}`, `"p"`, `"p"`, 0, false, false},
		// finding 6: object and array ids, read whole and canonically
		{"object id", `{"id":{"shard":0,"row":5},"completion_tokens":1}`, `{"row":5e0,"shard":0}`, `{"shard":0,"row":5}`, 1, true, false},
		{"object id spaced", `{"id": {"row": 5.0, "shard": 0}}`, `{"row":5e0,"shard":0}`, `{"row":5.0,"shard":0}`, 0, false, false},
		{"array id", `{"id":[0,5]}`, `[0,5e0]`, `[0,5]`, 0, false, false},
		{"object id dup key", `{"id":{"a":1,"a":2}}`, `{"a":2e0}`, `{"a":1,"a":2}`, 0, false, false},
		{"raw tab in string", "{\"id\":\"a\tb\"}", ``, ``, 0, false, true},
		{"bad escape", `{"id":"p\x5"}`, ``, ``, 0, false, true},
		// finding 7: the exact key
		{"Id after id", `{"messages":[],"id":"p7","Id":"src2"}`, `"p7"`, `"p7"`, 0, false, false},
		{"ID before id", `{"ID":"src","id":"p7"}`, `"p7"`, `"p7"`, 0, false, false},
		{"only Id", `{"Id":"p7"}`, ``, ``, 0, false, true},
		// finding 24: duplicate keys, the last wins
		{"dup id", `{"id":"x0","id":"p0"}`, `"p0"`, `"p0"`, 0, false, false},
		{"dup id escaped", `{"id":"x0","\u0069d":"p0"}`, `"p0"`, `"p0"`, 0, false, false},
		{"dup tokens", `{"id":"x","completion_tokens":1,"completion_tokens":2}`, `"x"`, `"x"`, 2, true, false},
		// finding 19: BOM, CRLF
		{"bom", "\xef\xbb\xbf{\"id\":\"p0\"}", `"p0"`, `"p0"`, 0, false, false},
		{"crlf", "{\"id\":\"p0\",\"completion_tokens\":3}\r", `"p0"`, `"p0"`, 3, true, false},
		// finding 5: the head is intact, the body is not
		{"glued", `{"id":20,"category":"A","prompt_tokens":{"id":21,"category":"A","completion_tokens":5}`, ``, ``, 0, false, true},
		{"nul body", "{\"id\":20,\"category\":\"A\",\"prompt_tokens\":\x00\x00\x00", ``, ``, 0, false, true},
		{"trailing garbage", `{"id":1}x`, ``, ``, 0, false, true},
		{"two objects", `{"id":1}{"id":2}`, ``, ``, 0, false, true},
		{"no id", `{"prompt":"no id"}`, ``, ``, 0, false, true},
		{"null id", `{"id":null}`, ``, ``, 0, false, true},
		{"torn", `{"id":"torn`, ``, ``, 0, false, true},
		{"garbage", `garbage`, ``, ``, 0, false, true},
		{"array line", `[{"id":1}]`, ``, ``, 0, false, true},
		{"null line", `null`, ``, ``, 0, false, true},
	}
	for _, c := range cases {
		for _, sealIt := range []bool{false, true} {
			line := []byte(c.line)
			if sealIt {
				if c.err || !json.Valid(bytes.TrimPrefix(line, bom)) {
					continue
				}
				var buf bytes.Buffer
				json.Compact(&buf, bytes.TrimPrefix(line, bom))
				line = bytes.TrimSuffix(SealRecord(buf.Bytes()), []byte{'\n'})
			}
			h, err := ParseRecordHead(line)
			if (err != nil) != c.err {
				t.Errorf("%s (sealed %v): err %v", c.name, sealIt, err)
				continue
			}
			if err != nil {
				continue
			}
			if h.Key != c.key || h.CompletionTokens != c.tokens || h.HasTokens != c.has {
				t.Errorf("%s (sealed %v): got key %s tokens %d %v", c.name, sealIt, h.Key, h.CompletionTokens, h.HasTokens)
			}
			if !sealIt && string(h.ID) != c.id {
				t.Errorf("%s: ID %s, want %s", c.name, h.ID, c.id)
			}
			if !json.Valid(h.ID) {
				t.Errorf("%s: ID %q is not valid JSON", c.name, h.ID)
			}
		}
	}
}

// TestRecordKeyEquality: ids that are one JSON value share a Key; others do not.
func TestRecordKeyEquality(t *testing.T) {
	same := [][]string{
		{`"é"`, `"\u00e9"`, `"\u00E9"`},
		{`"a/b"`, `"a\/b"`},
		{`"&<>"`, `"\u0026\u003c\u003e"`},
		{`7`, `7.0`, `7e0`, `70e-1`, `0.7e1`, `7.000E+0`},
		{`0`, `-0`, `0.0`, `0e5`},
		{`10000000000000000000000000`, `1e25`, `1E+25`},
		{`{"a":1,"b":[1,"x"]}`, `{ "b" : [1.0, "\u0078"], "a" : 1 }`},
		{`1e100000000000000000000`, `10e99999999999999999999`},
	}
	diff := []string{`7`, `"7"`, `8`, `10000000000000000000000001`, `[7]`, `{"a":7}`, `"e"`, `true`, `"true"`, `1e100000000000000000001`}
	key := func(id string) string {
		h, err := ParseRecordHead([]byte(`{"id":` + id + `}`))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return h.Key
	}
	for _, g := range same {
		for _, id := range g[1:] {
			if key(id) != key(g[0]) {
				t.Errorf("%s and %s: keys %s and %s", g[0], id, key(g[0]), key(id))
			}
		}
	}
	seen := map[string]string{}
	for _, id := range diff {
		k := key(id)
		if o, ok := seen[k]; ok {
			t.Errorf("%s and %s share key %s", o, id, k)
		}
		seen[k] = id
	}
}

func TestSealRecord(t *testing.T) {
	rec := `{"id":"p1","category":"A","completion_tokens":12,"content":"hi"}`
	s := SealRecord([]byte(rec + "\n"))
	if !bytes.HasSuffix(s, []byte("\"}\n")) || !bytes.Contains(s, []byte(`,"sw_crc":"`)) || !json.Valid(s) {
		t.Fatalf("sealed: %s", s)
	}
	line := s[:len(s)-1]
	if _, ok := fastHead(line); !ok {
		t.Fatalf("fast path refused its own seal: %s", line)
	}
	// any one damaged byte breaks the seal; the full decode then decides
	for i := range line {
		bad := bytes.Clone(line)
		bad[i] ^= 0x01
		if _, ok := fastHead(bad); ok {
			t.Errorf("byte %d flipped: still sealed: %q", i, bad)
		}
	}
	// records the fast path could misread are not sealed
	for _, r := range []string{
		`{"id":"a","id":"b","completion_tokens":1}`,
		`{"id":"a","\u0069d":"b","completion_tokens":1}`,
		`{"id":"a","x":{"k":0,"completion_tokens":5},"completion_tokens":3}`,
		`{"id":"a","completion_tokens":1,"completion_tokens":2}`,
		`{"id":"a"}`,
		`{"id":"a","completion_tokens":1`,
		`{"category":"A","id":"a","completion_tokens":1}`,
	} {
		if bytes.Contains(SealRecord([]byte(r)), []byte("sw_crc")) {
			t.Errorf("sealed %s", r)
		}
	}
}

// oracle reads a line the slow, obvious way: one JSON object decoded into
// map[string]any with UseNumber.
func oracle(line []byte) (RecordHead, error) {
	line = pythonNulls(bytes.TrimPrefix(line, bom))
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return RecordHead{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return RecordHead{}, errors.New("trailing data")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return RecordHead{}, ErrNotObject
	}
	id, ok := m["id"]
	if !ok || id == nil {
		return RecordHead{}, ErrNoID
	}
	h := RecordHead{Key: string(AppendCanonical(nil, id))}
	try := func(x any) bool {
		n, ok := oracleTokens(x)
		if ok {
			h.CompletionTokens, h.HasTokens = n, true
		}
		return ok
	}
	if !try(m["completion_tokens"]) {
		for _, o := range []string{"usage", "meta_info"} {
			if sub, ok := m[o].(map[string]any); ok && try(sub["completion_tokens"]) {
				break
			}
		}
	}
	return h, nil
}

// oracleTokens uses big.Rat; it gives up (false) on literals too large for it.
func oracleTokens(x any) (int64, bool) {
	var s string
	switch x := x.(type) {
	case json.Number:
		s = string(x)
	case string:
		if !json.Valid([]byte(x)) || x == "" || !(x[0] == '-' || x[0] >= '0' && x[0] <= '9') {
			return 0, false
		}
		s = x
	default:
		return 0, false
	}
	if len(s) > 300 || exponentTooBig(s) {
		return countTokens([]byte(s))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() >= 1e18 {
		return 0, false
	}
	return r.Num().Int64(), true
}

func exponentTooBig(s string) bool {
	i := strings.IndexAny(s, "eE")
	return i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3
}

// checkAgainstOracle: ParseRecordHead agrees with the oracle on every line,
// and the fast path, when it answers, agrees too.
func checkAgainstOracle(t *testing.T, line []byte) {
	t.Helper()
	want, werr := oracle(line)
	got, err := ParseRecordHead(line)
	fast, fastOK := fastHead(line)
	if werr != nil {
		if err == nil && !fastOK {
			t.Fatalf("%q: oracle says %v, ParseRecordHead accepted it: %+v", line, werr, got)
		}
		if fastOK {
			if _, sealOK := sealed(line); !sealOK {
				t.Fatalf("%q: fast path accepted an unsealed invalid line", line)
			}
		}
		return
	}
	if (err == nil) != (werr == nil) || errors.Is(err, ErrNoID) != errors.Is(werr, ErrNoID) {
		t.Fatalf("%q: err %v, oracle %v", line, err, werr)
	}
	if got.Key != want.Key || got.CompletionTokens != want.CompletionTokens || got.HasTokens != want.HasTokens {
		t.Fatalf("%q: got %s %d %v, oracle %s %d %v", line, got.Key, got.CompletionTokens, got.HasTokens, want.Key, want.CompletionTokens, want.HasTokens)
	}
	if fastOK && (fast.Key != want.Key || fast.CompletionTokens != want.CompletionTokens || fast.HasTokens != want.HasTokens) {
		t.Fatalf("%q: fast %s %d %v, oracle %s %d %v", line, fast.Key, fast.CompletionTokens, fast.HasTokens, want.Key, want.CompletionTokens, want.HasTokens)
	}
	if !json.Valid(got.ID) {
		t.Fatalf("%q: ID %q is not valid JSON", line, got.ID)
	}
	if k, err := CanonicalKey(got.ID); err != nil || k != got.Key {
		t.Fatalf("%q: ID %s has key %s, want %s (%v)", line, got.ID, k, got.Key, err)
	}
	checkNumberKey(t, line, got.ID, got.Key)
}

// checkNumberKey: a numeric id's key holds its exact value.
func checkNumberKey(t *testing.T, line, id []byte, key string) {
	if len(id) == 0 || !(id[0] == '-' || id[0] >= '0' && id[0] <= '9') || len(id) > 300 || exponentTooBig(string(id)) || exponentTooBig(key) {
		return
	}
	a, ok1 := new(big.Rat).SetString(string(id))
	b, ok2 := new(big.Rat).SetString(key)
	if !ok1 || !ok2 || a.Cmp(b) != 0 {
		t.Fatalf("%q: id %s, key %s: values differ", line, id, key)
	}
}

func FuzzRecordHeadDifferential(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","completion_tokens":1}`,
		`{"id":1`,
		`{"id": "x", "category": "A", "completion_tokens": 5}`,
		`{"category": "A", "id": "\u00e9t\u00e9-0", "completion_tokens": 100.0}`,
		`{"id":{"shard":0,"row":5},"completion_tokens":"7"}`,
		`{"id":"x0","id":"p0","Id":"q"}`,
		"{\"id\":20,\"category\":\"A\",\"prompt_tokens\":\x00\x00{\"id\":21}",
		`{"id":20,"category":"A","prompt_tokens":{"id":21,"category":"A","completion_tokens":5}`,
		"\xef\xbb\xbf{\"id\":\"p0\"}\r",
		`{"id": 2, "content": "x", "completion_tokens": Infinity, "score": NaN, "low": -Infinity}`,
	} {
		f.Add([]byte(s))
	}
	f.Add(bytes.TrimSuffix(SealRecord([]byte(`{"id":"B1-0","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","content":"hi"}`)), []byte{'\n'}))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstOracle(t, b)
		// the same record as the worker would write it: compact, sealed
		var buf bytes.Buffer
		if json.Compact(&buf, bytes.TrimPrefix(b, bom)) == nil {
			s := SealRecord(buf.Bytes())
			checkAgainstOracle(t, s[:len(s)-1])
		}
	})
}

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(`
server = "http://127.0.0.1:30000"
api = "chat"
[classes.SHORT]
concurrency = 150
max_tokens = 10240
sampling = { temperature = 0.6, top_p = 0.95 }
[[categories]]
name = "B1_glaive"
class = "SHORT"
max_samples = 10000
[[categories]]
name = "B2_x"
class = "SHORT"
token_budget = 10_000_000
`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Classes["SHORT"].Concurrency != 150 || m.Categories[1].TokenBudget != 10_000_000 || m.Classes["SHORT"].Sampling["top_p"] != 0.95 {
		t.Errorf("%+v", m)
	}
	for _, bad := range []string{`api = "grpc"`, `servr = "x"`, "[[categories]]\nclass = \"SHORT\"", "[classes.A]\n[[categories]]\nname=\"x\"\nclass=\"B\"", "[[categories]]\nname=\"x\"\n[[categories]]\nname=\"x\""} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// TestScanObjectMatchesEncodingJSON: the line scanner accepts exactly what
// encoding/json accepts, and Python's NaN and Infinity as values.
func TestScanObjectMatchesEncodingJSON(t *testing.T) {
	deep := func(n int) string { return `{"id":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}" }
	cases := []string{
		`{}`, ` {} `, "{\"a\":1}\r\n", `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":1 "b":2}`,
		`{"a":[1,2,]}`, `{"a":[,]}`, `{"a":[]}`, `{"a":{}}`, `{"a":{"b":[{"c":null}]}}`,
		`{"a":-}`, `{"a":-0}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1E-7}`, `{"a":-1.5e+10}`,
		`{"a":tru}`, `{"a":true}`, `{"a":nul}`, `{"a":falsey}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":-Infinity}`, `{"a":[NaN,-Infinity]}`, `{"a":nan}`, `{"a":-NaN}`, `{"a":Infinityx}`, `{"a":"NaN"}`,
		`{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"\x"}`, `{"a":"\/\b\f\n\r\t\"\\"}`, "{\"a\":\"\x7f\xff\xfe\"}", "{\"a\":\"\x1f\"}",
		`{"a":"unterminated}`, `{"a":1}}`, `{"a":1}{`, `[1]`, `"x"`, `1`, `null`, ``, ` `, `{`, `{"a"`, `{"a":`, `{"a":[`,
		deep(10000), deep(10001), deep(9999),
	}
	// a special byte at every offset across the eight-byte steps
	for n := 0; n < 24; n++ {
		for _, sp := range []string{"\x01", "\x1f", `"`, `\\`, `\n`, `\u00e9`, "\x7f", "\xc3\xa9", " "} {
			cases = append(cases, `{"id":"`+strings.Repeat("a", n)+sp+strings.Repeat("b", 17-n%9)+`"}`)
		}
	}
	for _, s := range cases {
		want := json.Valid(pythonNulls([]byte(s))) && strings.HasPrefix(strings.TrimSpace(s), "{")
		got, _ := scanObject([]byte(s), func(member) {})
		if got != want {
			t.Errorf("%.60q: scanObject %v, encoding/json %v", s, got, want)
		}
	}
}

// pythonNulls is the oracle's view of Python's extension: NaN, Infinity and
// -Infinity outside strings read as null (never a usable id or count).
func pythonNulls(b []byte) []byte {
	var out []byte
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\' && i+1 < len(b):
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case !in:
			for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
				if bytes.HasPrefix(b[i:], []byte(lit)) {
					out = append(out, "null"...)
					i += len(lit) - 1
					goto next
				}
			}
		}
		out = append(out, c)
	next:
	}
	return out
}
