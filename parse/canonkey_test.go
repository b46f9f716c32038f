package parse

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pyIDs is the differential id harness, shared with worker's tests:
// python3's json.loads reading of ids (scripts/ids.py).
const pyIDs = "../scripts/ids.py"

func python(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed for the differential id check under CI")
		}
		t.Skip("no python3")
	}
	return py
}

// genString is a JSON string token built from the pieces that used to
// collapse: lone and paired surrogate escapes, raw invalid UTF-8, U+FFFD,
// escapes of plain characters.
func genString(r *rand.Rand) string {
	pieces := []string{
		"x", "é", `\u00e9`, `\ud800`, `\udc00`, `\ud83d`, `\ude00`, `\ud83d\ude00`, "😀", `\ufffd`, "\uFFFD",
		"\xe9", "\xe8", "\xed\xa0\x80", "\xf0\x9f\x98", "\xff", `\udce9`, `\udce8`, `\\`, `\"`, `\/`, "/", `\n`, `\u000a`, `\t`,
		`\u0041`, "A", `\uDC00`, `\uD800\uDC00`, "𐀀",
	}
	var b strings.Builder
	b.WriteByte('"')
	for n := r.IntN(4); n >= 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

func genID(r *rand.Rand, depth int) string {
	switch k := r.IntN(10); {
	case k < 6 || depth > 1:
		return genString(r)
	case k == 6:
		nums := []string{"7", "7.0", "70e-1", "-0", "0", "9007199254740993", "9007199254740992", "1e21", "1000000000000000000000"}
		return nums[r.IntN(len(nums))]
	case k == 7:
		return "[" + genID(r, depth+1) + "," + genID(r, depth+1) + "]"
	default:
		return "{" + genString(r) + ":" + genID(r, depth+1) + "," + genString(r) + ":1}"
	}
}

// TestCanonicalKeyAgreesWithPython: two ids have one key exactly when
// python3's json.loads finds them equal, over generated ids rich in lone
// surrogates, surrogateescape bytes and invalid UTF-8 (integrity review
// finding 3: all of these used to become U+FFFD and collapse).
func TestCanonicalKeyAgreesWithPython(t *testing.T) {
	py := python(t)
	r := rand.New(rand.NewPCG(25, 6))
	fixed := []string{`"x\ud800"`, `"x\udc00"`, `"x\ufffd"`, `"caf\udce9"`, `"caf\udce8"`, "\"r\xe9sum\xe9\"", "\"r\xe8sum\xe8\"", `"plain"`}
	var ids []string
	ids = append(ids, fixed...)
	for range 3000 {
		ids = append(ids, genID(r, 0))
	}
	var file bytes.Buffer
	for _, id := range ids {
		file.WriteString(`{"id": ` + id + "}\n")
	}
	path := filepath.Join(t.TempDir(), "ids.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// for each line, the first line whose id python3 finds equal: the grouping resume must reproduce
	out, err := exec.Command(py, pyIDs, "groups", path).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	want := strings.Fields(string(out))
	if len(want) != len(ids) {
		t.Fatalf("python3 read %d ids, want %d", len(want), len(ids))
	}
	first := map[string]int{}
	groups := 0
	for n, line := range bytes.Split(bytes.TrimSuffix(file.Bytes(), []byte{'\n'}), []byte{'\n'}) {
		h, err := ParseRecordHead(line)
		if err != nil {
			t.Fatalf("line %d %q: %v", n, line, err)
		}
		g, ok := first[h.Key]
		if !ok {
			first[h.Key], g = n, n
			groups++
		}
		if strconv.Itoa(g) != want[n] {
			t.Fatalf("id %q (line %d): Go groups it with line %d, python3 with line %s (%q)", ids[n], n, g, want[n], ids[atoi(want[n])])
		}
		// the sealed fast path gives the same key
		sealedLine := SealRecord([]byte(`{"id":` + string(h.ID) + `,"completion_tokens":1}`))
		if h2, err := ParseRecordHead(bytes.TrimSuffix(sealedLine, []byte{'\n'})); err != nil || h2.Key != h.Key {
			t.Fatalf("id %q: sealed record key %q (%v), plain %q", ids[n], h2.Key, err, h.Key)
		}
	}
	if len(fixed) > 0 && first[mustKey(t, fixed[0])] == first[mustKey(t, fixed[1])] {
		t.Fatal("x\\ud800 and x\\udc00 share a key")
	}
	t.Logf("%d ids, %d distinct for both", len(ids), groups)
}

func mustKey(t *testing.T, tok string) string {
	k, err := CanonicalKey([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// The review's ids: the five that collapsed are five keys; 1e21 and 10**21
// are one.
func TestCanonicalKeyKeepsSurrogatesApart(t *testing.T) {
	toks := []string{`"x\ud800"`, `"x\udc00"`, `"x\ufffd"`, `"caf\udce9"`, `"caf\udce8"`, "\"r\xe9sum\xe9\"", "\"r\xe8sum\xe8\"", "1e21", "1000000000000000000000"}
	keys := map[string]string{}
	for _, tok := range toks {
		k := mustKey(t, tok)
		if prev, ok := keys[k]; ok {
			if tok == "1000000000000000000000" && prev == "1e21" {
				continue
			}
			t.Errorf("%q and %q share key %q", prev, tok, k)
		}
		keys[k] = tok
	}
	// a raw byte is the surrogate that surrogateescape makes of it, as in Python
	if a, b := mustKey(t, "\"caf\xe9\""), mustKey(t, `"caf\udce9"`); a != b {
		t.Errorf("raw 0xe9 %s and \\udce9 %s differ; Python reads them as one", a, b)
	}

}
