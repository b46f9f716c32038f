package agentproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestProtoIsVersion(t *testing.T) {
	if Proto != fmt.Sprintf("synthwatch-agent/%d", Version) {
		t.Fatalf("Proto %q does not name Version %d", Proto, Version)
	}
}

// Frames round-trip over one stream, type information sent once, and
// each Recv reads its own frame only.
func TestFramesRoundTrip(t *testing.T) {
	var wire bytes.Buffer
	w := NewWriter(&wire)
	reqs := []Request{
		{Strings: []string{"/r/a b", "x\n'\\"}, Shapes: []Shape{{Key: 0, Name: "tail", Args: []Arg{{Ref: 1}, {Num: true}, {Lit: "65536"}}}}, Calls: []Call{{Key: 0, Nums: []string{"-4096"}}}},
		{Calls: []Call{{Key: 0, Nums: []string{"123"}}}},
	}
	for _, r := range reqs {
		if err := w.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := w.Frame(Answer{Ops: []OpAnswer{{Key: 0, Data: []byte("@S f 1 2 3\n")}}})
	wire.Write(first)
	r := NewReader(&wire)
	for i, want := range reqs {
		var got Request
		if err := r.Recv(&got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(got.Calls) != 1 || got.Calls[0].Nums[0] != want.Calls[0].Nums[0] || len(got.Strings) != len(want.Strings) {
			t.Fatalf("frame %d: %+v, want %+v", i, got, want)
		}
	}
	var a Answer
	if err := r.Recv(&a); err != nil || string(a.Ops[0].Data) != "@S f 1 2 3\n" {
		t.Fatalf("answer %+v, %v", a, err)
	}
	if err := r.Recv(&a); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

// A frame's length over MaxFrame is refused before a byte of it is read.
func TestFrameOverTheBound(t *testing.T) {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], MaxFrame+1)
	r := NewReader(io.MultiReader(bytes.NewReader(h[:]), strings.NewReader(strings.Repeat("x", 1<<16))))
	var a Answer
	if err := r.Recv(&a); !errors.Is(err, ErrTooBig) {
		t.Fatalf("got %v, want ErrTooBig", err)
	}
}
