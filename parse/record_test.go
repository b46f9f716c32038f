package parse

import "testing"

func TestParseRecordHead(t *testing.T) {
	cases := []struct {
		line   string
		id     string
		tokens int64
		has    bool
		err    bool
	}{
		{`{"id":"a1","category":"B1","run":"r","prompt_tokens":5,"completion_tokens":217,"content":"x"}`, `"a1"`, 217, true, false},
		{`{"id":42,"category":"B1","completion_tokens":3}`, `42`, 3, true, false},
		{`{"id":"q\"uote","completion_tokens":9}`, `"q\"uote"`, 9, true, false},
		{`{"id":"x","category":"a,\"completion_tokens\":5","completion_tokens":8}`, `"x"`, 8, true, false},
		{`{"id":7}`, `7`, 0, false, false},
		{`{"prompt":"p","id": "late" ,"completion_tokens": 12}`, `"late"`, 12, true, false},
		{`{"prompt":"no id"}`, ``, 0, false, true},
		{`{"id":null}`, ``, 0, false, true},
		{`{"id":"torn`, ``, 0, false, true},
		{`garbage`, ``, 0, false, true},
	}
	for _, c := range cases {
		h, err := ParseRecordHead([]byte(c.line))
		if (err != nil) != c.err {
			t.Errorf("%s: err %v", c.line, err)
			continue
		}
		if err == nil && (string(h.ID) != c.id || h.CompletionTokens != c.tokens || h.HasTokens != c.has) {
			t.Errorf("%s: got %s %d %v", c.line, h.ID, h.CompletionTokens, h.HasTokens)
		}
	}
}

func FuzzParseRecordHead(f *testing.F) {
	f.Add([]byte(`{"id":"a","completion_tokens":1}`))
	f.Add([]byte(`{"id":1`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseRecordHead(b)
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
