package parse

import "testing"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:30000", "http://127.0.0.1:30000"},
		{"http://admin:hunter2pass@127.0.0.1:8080/v1", "http://admin:***@127.0.0.1:8080/v1"},
		{"server http://admin:hunter2pass@h:1 (openai) 2 categories", "server http://admin:***@h:1 (openai) 2 categories"},
		{`{"server":"https://u:p%40ss@h"}`, `{"server":"https://u:***@h"}`},
		{"http://u:p@ss@host/x", "http://u:***@host/x"},                    // Go takes the last @, so does this
		{"http://user@host/x mail a@b.c", "http://user@host/x mail a@b.c"}, // a user alone is no secret
		{"a http://a:1@x and http://b:2@y", "a http://a:***@x and http://b:***@y"},
		{"http://admin:***@h", "http://admin:***@h"},
		{"no url: x@y:z", "no url: x@y:z"},
		{"http://h/?next=http://u:pw@k", "http://h/?next=http://u:***@k"},
		{"ends in ://", "ends in ://"},
	} {
		got := Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if again := Redact(got); again != got {
			t.Errorf("not idempotent: %q -> %q", got, again)
		}
	}
}
