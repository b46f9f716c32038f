// Package agentproto is the protocol between the dashboard and the host
// agent (`synthwatch agent`): its version, its messages as Go types, and
// their frames. Both ends import it, so a request or an answer is one type,
// never two spellings of it.
//
// On the exec's stdout the agent first writes Marker(nonce): the nonce is
// the dashboard's, new each session, so nothing a login shell printed
// before the agent started (an rc file's echo, a MOTD, a conda notice) can
// be taken for it. After the marker, stdout is frames only: a 4-byte
// big-endian length, then that many bytes of one gob message, deflated
// when that is smaller and the message is over compressAbove (the length's
// top bit says so): a cold poll's answer is mostly log text, which SSH
// carries as it is (x/crypto/ssh has no compression). The first
// frame is a Hello; then each Request frame on stdin gets one Answer frame.
// A frame over MaxFrame is refused, never buffered.
package agentproto

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol's version: bump it with any change to a
// message's meaning. The installed agent's path is keyed by it
// (~/.cache/synthwatch/agent/<Version>-<os>-<arch>/synthwatch), so a bump
// installs the new agent beside the old one.
const Version = 17

// Proto names Version as `synthwatch agent --proto` prints it
// (TestProtoIsVersion keeps the two one).
const Proto = "synthwatch-agent/17"

// MaxFrame bounds one frame: an answer's reads are bounded by the
// caller's per-poll limits; this keeps a broken host (or a stray writer on
// stdout) from filling the laptop's memory.
const MaxFrame = 256 << 20

// MaxSkip bounds what may come before the marker (a login shell's
// banners): past it the agent is taken as absent, not waited for (the
// dashboard's readHello).
const MaxSkip = 1 << 20

// Marker is what the agent writes before its first frame.
func Marker(nonce string) string { return "\n@SWAGENT " + nonce + "\n" }

// Hello is the agent's first frame: who answers.
type Hello struct {
	Proto string // Proto of the agent's build
	Nonce string // the session's, echoed
	Exe   string // the agent's path on the host (remote text)
	OS    string // runtime.GOOS, runtime.GOARCH of the agent's build
	Arch  string
	// Progs is a digest of the host programs the agent carries by name
	// (Arg.Prog): a dashboard names them only to an agent whose digest is
	// its own (a build of the same Version with other texts gets them as
	// text, as it did before it said hello)
	Progs string
}

// A Request asks the agent to run ops. Strings and op shapes are sent
// once a session and named by number after that, so a steady poll of
// 10,000 categories sends the ops' numbers, not their paths.
type Request struct {
	Strings []string // new strings, numbered on from the session's last
	Shapes  []Shape  // new op shapes
	Calls   []Call   // the ops to run, in order
	// Progs is the dashboard's Hello.Progs when a shape names a program:
	// the agent refuses the request when its own differs (a first request
	// on the command line, sent before the hello, on a hint's word)
	Progs string
}

// Shape is an op's name and arguments, with its numbers left open.
type Shape struct {
	Key  int
	Name string
	Args []Arg
}

// Arg is one argument of a Shape: a literal, a string sent before (Ref,
// 1-based), a number the Call fills in (Num), or a host program the agent
// carries by that name (Prog: its text is the agent's own copy, unsent; the
// programs are part of the protocol, so a change of one is a new Version).
type Arg struct {
	Lit  string
	Ref  int
	Num  bool
	Prog string
}

// Call is one op of a request: its shape and its open numbers, in order.
type Call struct {
	Key  int
	Nums []string
}

// Answer answers a Request: one OpAnswer per Call, in order.
type Answer struct {
	Ops []OpAnswer
	Err string // the request was refused (a bad request): the agent ends
}

// OpAnswer is one op's records; Same: as this key's last answer, unsent.
type OpAnswer struct {
	Key  int
	Same bool
	Data []byte
}

// Writer writes frames of gob messages.
type Writer struct {
	w    io.Writer
	buf  bytes.Buffer
	enc  *gob.Encoder
	zbuf bytes.Buffer
	zw   *flate.Writer
}

// compressAbove: a message this long or shorter goes as it is (a steady
// poll's few records gain little and would pay the compressor's setup).
const compressAbove = 2 << 10

// maxInflated bounds a deflated frame once inflated (a variable for its test).
var maxInflated int64 = MaxFrame

// deflated marks a frame's length: its payload is deflated.
const deflated = 1 << 31

// NewWriter writes frames to w.
func NewWriter(w io.Writer) *Writer {
	fw := &Writer{w: w}
	fw.enc = gob.NewEncoder(&fw.buf)
	return fw
}

// Frame encodes v as the next frame's bytes (length included) without
// writing it: the dashboard sends a first request on the command line.
func (fw *Writer) Frame(v any) ([]byte, error) {
	fw.buf.Reset()
	if err := fw.enc.Encode(v); err != nil {
		return nil, err
	}
	p := fw.buf.Bytes()
	if len(p) > MaxFrame {
		return nil, fmt.Errorf("agentproto: a frame of %d bytes, over the bound of %d", len(p), MaxFrame)
	}
	flag := uint32(0)
	if len(p) > compressAbove {
		fw.zbuf.Reset()
		if fw.zw == nil {
			// the default level, not BestSpeed: a frame this big is a cold
			// read's answer (a log's digest), 9.2 KB against 11.5 on the
			// benchmark's root for about a millisecond of the host's CPU
			fw.zw, _ = flate.NewWriter(&fw.zbuf, flate.DefaultCompression) // a valid level: no error
		} else {
			fw.zw.Reset(&fw.zbuf)
		}
		if _, err := fw.zw.Write(p); err != nil {
			return nil, err
		}
		if err := fw.zw.Close(); err != nil {
			return nil, err
		}
		if fw.zbuf.Len() < len(p) {
			p, flag = fw.zbuf.Bytes(), deflated
		}
	}
	out := make([]byte, 4+len(p))
	binary.BigEndian.PutUint32(out, uint32(len(p))|flag)
	copy(out[4:], p)
	return out, nil
}

// Send writes v as one frame.
func (fw *Writer) Send(v any) error {
	b, err := fw.Frame(v)
	if err != nil {
		return err
	}
	_, err = fw.w.Write(b)
	return err
}

// Reader reads frames of gob messages.
type Reader struct {
	fr  *frames
	dec *gob.Decoder
}

// NewReader reads frames from r (positioned after the marker; a
// *bufio.Reader is used as it is, so nothing it holds is lost).
func NewReader(r io.Reader) *Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	fr := &frames{r: br}
	return &Reader{fr: fr, dec: gob.NewDecoder(fr)}
}

// Recv reads the next frame into v. io.EOF: the stream ended between
// frames.
func (r *Reader) Recv(v any) error {
	if err := r.fr.next(); err != nil {
		return err
	}
	if err := r.dec.Decode(v); err != nil {
		if r.fr.z != nil && r.fr.zlim.N <= 0 {
			return fmt.Errorf("%w: over %d bytes inflated", ErrTooBig, maxInflated)
		}
		return fmt.Errorf("agentproto: frame: %w", err)
	}
	if r.fr.z != nil {
		return r.fr.endDeflated()
	}
	if r.fr.left != 0 {
		return fmt.Errorf("agentproto: %d bytes of a frame unread", r.fr.left)
	}
	return nil
}

// ErrTooBig is a frame over MaxFrame.
var ErrTooBig = errors.New("agentproto: a frame over the bound")

// frames is the payloads of frames, one at a time: the decoder reads
// within the frame that next opened, never past it.
// It is an io.ByteReader, so gob reads it as it is, not through a
// buffer of its own that would read ahead into the next frame. A deflated
// frame is inflated as gob reads it, never held whole, bounded by
// maxInflated; its end is checked after the message (endDeflated).
type frames struct {
	r    *bufio.Reader
	left int               // a plain frame's bytes not read yet
	z    *bufio.Reader     // a deflated frame's inflated bytes, else nil
	zlim *io.LimitedReader // bounds them (one byte past maxInflated: over)
	lr   *limitedBytes     // its deflated bytes on the stream
	zr   io.ReadCloser
}

// limitedBytes is the frame's deflated bytes as an io.ByteReader, so the
// inflater reads none past its stream's end (it would buffer ahead from a
// plain reader) and bytes after it in the frame are seen.
type limitedBytes struct {
	r *bufio.Reader
	N int64
}

func (l *limitedBytes) Read(p []byte) (int, error) {
	if l.N <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.N {
		p = p[:l.N]
	}
	n, err := l.r.Read(p)
	l.N -= int64(n)
	return n, err
}

func (l *limitedBytes) ReadByte() (byte, error) {
	if l.N <= 0 {
		return 0, io.EOF
	}
	c, err := l.r.ReadByte()
	if err == nil {
		l.N--
	}
	return c, err
}

func (f *frames) ReadByte() (byte, error) {
	if f.z != nil {
		c, err := f.z.ReadByte()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a gob message longer than its frame
		}
		return c, err
	}
	if f.left == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	c, err := f.r.ReadByte()
	if err == nil {
		f.left--
	} else if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return c, err
}

func (f *frames) next() error {
	var h [4]byte
	if _, err := io.ReadFull(f.r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return fmt.Errorf("agentproto: a frame's length cut: %w", err)
		}
		return err
	}
	hv := binary.BigEndian.Uint32(h[:])
	n := hv &^ deflated
	if n > MaxFrame {
		return fmt.Errorf("%w: %d bytes, the bound is %d", ErrTooBig, n, MaxFrame)
	}
	f.z = nil
	if hv&deflated == 0 {
		f.left = int(n)
		return nil
	}
	f.lr = &limitedBytes{r: f.r, N: int64(n)}
	if f.zr == nil {
		f.zr = flate.NewReader(f.lr)
	} else if err := f.zr.(flate.Resetter).Reset(f.lr, nil); err != nil {
		return err
	}
	f.zlim = &io.LimitedReader{R: f.zr, N: maxInflated + 1}
	f.z = bufio.NewReaderSize(f.zlim, 32<<10)
	return nil
}

// endDeflated checks that the message read was the whole of its deflated
// frame: nothing inflated after it, no deflated byte left in the frame
// (the next frame would start mid-way), the bound kept.
func (f *frames) endDeflated() error {
	rest, err := io.Copy(io.Discard, f.z)
	switch {
	case f.zlim.N <= 0:
		return fmt.Errorf("%w: over %d bytes inflated", ErrTooBig, maxInflated)
	case err != nil:
		return fmt.Errorf("agentproto: a deflated frame: %w", err)
	case rest != 0:
		return fmt.Errorf("agentproto: %d bytes of a frame unread", rest)
	case f.lr.N != 0:
		return fmt.Errorf("agentproto: %d bytes after a deflated frame's payload", f.lr.N)
	}
	return nil
}

func (f *frames) Read(p []byte) (int, error) {
	if f.z != nil {
		n, err := f.z.Read(p)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	if f.left == 0 {
		return 0, io.ErrUnexpectedEOF // a gob message longer than its frame
	}
	if len(p) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= n
	if err == io.EOF && f.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
