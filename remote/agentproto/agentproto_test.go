package agentproto

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/gob"
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

// A long message is deflated on the wire and read back whole; a short one
// goes as it is; frames of both kinds follow each other on one stream.
func TestFramesDeflated(t *testing.T) {
	var wire bytes.Buffer
	w := NewWriter(&wire)
	logText := []byte(strings.Repeat("[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, gen throughput (token/s): 2560.00\n", 2000))
	msgs := []Answer{
		{Ops: []OpAnswer{{Key: 1, Data: logText}}},
		{Ops: []OpAnswer{{Key: 2, Data: []byte("@S f 1 2 3\n")}}},
		{Ops: []OpAnswer{{Key: 3, Data: logText[:len(logText)/2]}}},
	}
	for _, m := range msgs {
		if err := w.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	if wire.Len() > len(logText)/4 {
		t.Errorf("%d bytes on the wire for %d of log text: not deflated", wire.Len(), len(logText)*3/2)
	}
	r := NewReader(&wire)
	for i, want := range msgs {
		var got Answer
		if err := r.Recv(&got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Ops[0].Key != want.Ops[0].Key || !bytes.Equal(got.Ops[0].Data, want.Ops[0].Data) {
			t.Fatalf("frame %d: key %d, %d bytes; want key %d, %d bytes", i, got.Ops[0].Key, len(got.Ops[0].Data), want.Ops[0].Key, len(want.Ops[0].Data))
		}
	}
}

// A deflated frame that inflates past MaxFrame is refused, not buffered
// whole; one whose payload ends before its length is an error, not a
// stream read from the middle of a frame.
func TestDeflatedFrameBounds(t *testing.T) {
	defer func(m int64) { maxInflated = m }(maxInflated)
	maxInflated = 1 << 20 // MaxFrame's rule, at a size a test can inflate
	big, err := NewWriter(nil).Frame(Answer{Ops: []OpAnswer{{Key: 1, Data: make([]byte, 2<<20)}}})
	if err != nil || binary.BigEndian.Uint32(big)&deflated == 0 || len(big) > 64<<10 {
		t.Fatalf("the bomb: %v, %d bytes", err, len(big))
	}
	var a Answer
	if err := NewReader(bytes.NewReader(big)).Recv(&a); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a bomb: got %v, want ErrTooBig", err)
	}
	// a deflated frame: a gob message, then what is put after it
	frame := func(extraInflated, extraDeflated string) []byte {
		var g bytes.Buffer
		if err := gob.NewEncoder(&g).Encode(Answer{Ops: []OpAnswer{{Key: 2, Data: bytes.Repeat([]byte("log line\n"), 1000)}}}); err != nil {
			t.Fatal(err)
		}
		g.WriteString(extraInflated)
		var z bytes.Buffer
		zw, _ := flate.NewWriter(&z, flate.BestSpeed)
		zw.Write(g.Bytes())
		zw.Close()
		z.WriteString(extraDeflated)
		out := binary.BigEndian.AppendUint32(nil, uint32(z.Len())|deflated)
		return append(out, z.Bytes()...)
	}
	if err := NewReader(bytes.NewReader(frame("", ""))).Recv(&a); err != nil || len(a.Ops[0].Data) != 9000 {
		t.Fatalf("a deflated frame: %v", err)
	}
	if err := NewReader(bytes.NewReader(frame("", "xyz"))).Recv(&a); err == nil || !strings.Contains(err.Error(), "after a deflated frame") {
		t.Fatalf("trailing bytes: got %v", err)
	}
	if err := NewReader(bytes.NewReader(frame("more", ""))).Recv(&a); err == nil || !strings.Contains(err.Error(), "of a frame unread") {
		t.Fatalf("a message shorter than its frame: got %v", err)
	}
}
