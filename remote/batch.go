package remote

import (
	"bytes"
	"compress/gzip"
	crand "crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// A Batch is one request, to the agent or the fallback, that reads on the
// host what a poll needs: stats, reads, globs, line counts, /proc entries
// and whole commands. Every op returns a handle its asker reads once the
// batch ran (asks.go; the Poller's, pollasks.go): a poll costs the
// request's round trips instead of a chain of SFTP requests (open, read,
// readdir, stat…). The ops are
// arguments to a fixed script, never part of it, so no path is ever
// parsed as shell.
type Batch struct {
	args  []string
	ops   []int      // where each op starts in args
	execs []*ExecAsk // each exec op (and procs' scan), by index
	thens []*ThenAsk // the commands CountThen runs, by index
	cats  []*CatAsk  // each Cat op, answered by its path's read
	globs []*GlobAsk // each Glob op, answered by its pattern's G record
	reals []*PathAsk // each RealPath op, by its path's P record
	procs []*ProcsAsk
	poll  *PollAsks // the Tail, Count and Each ops' handles
	nonce string    // ends every record: a cut read shows (set by Argv)
	// Digests: the batch goes to the Go agent, which digests a Tail's
	// history on its first attach (taild); the fallback does not.
	Digests bool
}

// Cat reads [0, max) of path (a small whole file: a manifest, worker.json, /proc/stat).
func (b *Batch) Cat(path string, max int) *CatAsk {
	b.ops = append(b.ops, len(b.args))
	b.args = append(b.args, "cat", path, strconv.Itoa(max))
	c := &CatAsk{path: path, max: max}
	b.cats = append(b.cats, c)
	return c
}

// Glob lists the dir/*/name that exist (pattern names the answer); its
// answer is the handle's.
func (b *Batch) Glob(pattern, dir, name string) *GlobAsk {
	b.ops = append(b.ops, len(b.args))
	b.args = append(b.args, "glob", pattern, dir, name)
	g := &GlobAsk{pattern: pattern}
	b.globs = append(b.globs, g)
	return g
}

// Tail reads what t's next poll reads: its stat, its new bytes, and the
// head that tells a replaced file from a grown one; the answer is the
// handle's, read by the Poller (PollAsks).
func (b *Batch) Tail(t *Tail) *TailAsk {
	x := &TailAsk{path: t.Path}
	b.PollAsks().tails[t] = x
	b.fillOp(t) // before the tail's own: its stat, the last, is the one read
	b.ops = append(b.ops, len(b.args))
	if b.Digests && !t.attached && t.Digest != "" && t.History > 0 {
		// the history's digest reaches up to the bytes sent as they are
		back := t.screen()
		b.args = append(b.args, "taild", t.Path, "-"+strconv.FormatInt(back+1, 10), strconv.FormatInt(t.MaxPerPoll, 10),
			strconv.FormatInt(t.History+t.StartBack-back, 10), t.Digest)
		return x
	}
	b.args = append(b.args, "tail", t.Path, t.batchOff(), strconv.FormatInt(t.MaxPerPoll, 10))
	return x
}

// PollAsks are the batch's Tail, Count and Each handles, for a Poller's Asks.
func (b *Batch) PollAsks() *PollAsks {
	if b.poll == nil {
		b.poll = newPollAsks()
	}
	return b.poll
}

// batchOff is where t reads next: its offset, or "-N" to attach N bytes
// before the end (Tail.plan's attach, read as it is).
func (t *Tail) batchOff() string {
	if !t.attached {
		return "-" + strconv.FormatInt(t.StartBack+t.History+1, 10)
	}
	return strconv.FormatInt(t.off, 10)
}

// Count reads what c's next poll reads: its stat, then its new bytes with
// the overlap before them, or, above c.RemoteAbove new bytes, their line
// count on the host with the overlap and the file's last bytes; the
// answer is the handle's, read by the Poller (PollAsks).
func (b *Batch) Count(c *Counter) *CountAsk {
	b.ops = append(b.ops, len(b.args))
	k := len(c.tail)
	if c.tail == nil && c.off > 0 {
		k = int(min(overlapLen, c.off))
	}
	b.args = append(b.args, "count", c.Path, strconv.FormatInt(c.off, 10), strconv.Itoa(k), strconv.FormatInt(c.RemoteAbove, 10))
	x := &CountAsk{path: c.Path}
	b.PollAsks().counts[c] = x
	return x
}

// CountThen is Count, and when the host counts the new bytes (more than
// c.RemoteAbove), it also runs argv with c.Path, from+1 and the size
// counted less from: its answer is the handle's. from is at most c's offset.
func (b *Batch) CountThen(c *Counter, from int64, argv ...string) *ThenAsk {
	b.Count(c) // its handle is the Poller's (PollAsks)
	b.args[b.ops[len(b.ops)-1]] = "countthen"
	b.args = append(b.args, strconv.FormatInt(from, 10), strconv.Itoa(len(b.thens)), strconv.Itoa(len(argv)))
	b.args = append(b.args, argv...)
	th := &ThenAsk{argv: argv, path: c.Path, from: from}
	b.thens = append(b.thens, th)
	return th
}

// Each runs, for every folder under dir, Tail ops for tails (name, start
// back, max per poll) and Count ops for counts (name, remote above) on its
// files, as a first attach: the categories are not known before the batch.
// The handle holds what it read of each file, by path (PollAsks).
func (b *Batch) Each(dir string, tails []*Tail, counts []*Counter) *EachAsk {
	b.ops = append(b.ops, len(b.args))
	x := &EachAsk{dir: dir}
	b.PollAsks().each = append(b.poll.each, x)
	b.args = append(b.args, "each", dir, strconv.Itoa(len(tails)))
	for _, t := range tails {
		b.args = append(b.args, path.Base(t.Path), strconv.FormatInt(t.StartBack+t.History+1, 10), strconv.FormatInt(t.MaxPerPoll, 10))
	}
	b.args = append(b.args, strconv.Itoa(len(counts)))
	for _, c := range counts {
		b.args = append(b.args, path.Base(c.Path), strconv.FormatInt(c.RemoteAbove, 10))
	}
	return x
}

// Exec runs argv; its answer is the handle's.
func (b *Batch) Exec(argv ...string) *ExecAsk {
	b.ops = append(b.ops, len(b.args))
	b.args = append(b.args, "exec", strconv.Itoa(len(b.execs)), strconv.Itoa(len(argv)))
	b.args = append(b.args, argv...)
	x := &ExecAsk{argv: argv}
	b.execs = append(b.execs, x)
	return x
}

// RealPath resolves path's symlinks; its answer is the handle's.
func (b *Batch) RealPath(path string) *PathAsk {
	b.ops = append(b.ops, len(b.args))
	b.args = append(b.args, "realpath", path)
	r := &PathAsk{path: path}
	b.reals = append(b.reals, r)
	return r
}

// Procs reads the process worker.json (at stateFile) names, or, when that
// is not a live "worker" process, runs scan (a HoldersArgv) and reads
// every process it found writing (Holder.Writes: one that only reads is
// nobody's worker): each one's cmdline, stat and cwd, all the handle's.
func (b *Batch) Procs(stateFile string, scan []string) *ProcsAsk {
	b.ops = append(b.ops, len(b.args))
	b.args = append(b.args, "procs", stateFile, strconv.Itoa(len(b.execs)), strconv.Itoa(len(scan)))
	b.args = append(b.args, scan...)
	x := &ExecAsk{argv: scan}
	b.execs = append(b.execs, x)
	p := &ProcsAsk{scan: x}
	b.procs = append(b.procs, p)
	return p
}

// Argv is the one command the batch runs.
func (b *Batch) Argv() []string {
	if b.nonce == "" {
		var r [16]byte
		crand.Read(r[:])
		b.nonce = "~sw" + hex.EncodeToString(r[:])
	}
	return append([]string{"sh", "-c", batchOnce, "synthwatch-batch", b.nonce}, b.args...)
}

// The answers. Every record is a header line "@K STATUS A B C PLEN DLEN",
// then PLEN bytes of path and DLEN bytes of data, then the nonce and a newline. K is S
// (stat: STATUS f, d, p or o, A size, B mtime), R (read: A offset, B 1 when
// the bytes reach the end of the file), G (glob: data the matches, NUL
// ended), N (count: A from, B bytes, C lines), X (exec: path its index,
// A exit code, B stdout bytes; data stdout then stderr), L and P (readlink
// and realpath: data the target). STATUS is ok, f, d, p (a FIFO), o, noent or err
// (data the message). D (a Tail's history digested, by the Go agent only:
// A and B the range it stands for) is in digest.go; E (a server log's
// start lines before that history, B its end) in starts.go. U (the
// fallback's first record: A 1 when the host unpacks a packed command)
// is unpack. M (the fallback's last: a table of records whose bytes it read
// to temp files, and of the files it read whole by one cat) is addTable.
type answers struct {
	stats  map[string]statAns
	reads  map[string][]readAns
	globs  map[string]globAns
	counts map[string]countAns
	execs  map[string]ExecResult
	links  map[string]linkAns
	real   map[string]linkAns
	digest map[string][]byte
	starts map[string][]byte // E: a server log's start lines before its history (starts.go)
	unpack unpackAns
}

// unpackAns is the fallback's U record: whether the host has base64 and
// gzip (PackCommand); said is false where none came (the Go agent's).
type unpackAns struct{ said, ok bool }

type statAns struct {
	fi  FileInfo
	err error
}

type readAns struct {
	off  int64
	data []byte
	eof  bool // data ends where the file ended
	err  error
}

type globAns struct {
	paths []string
	err   error
}

type countAns struct {
	from, n, lines int64
	err            string
}

type linkAns struct {
	target string
	err    error
}

// batchError is the host's error for one answer. It is made for every
// missing file of every poll (an unchanged answer is parsed again), so it
// formats nothing until asked.
func batchError(status, path string, msg []byte) error {
	if status == "noent" {
		return &hostError{path: path, err: errNotExist}
	}
	return &hostError{path: path, msg: string(bytes.TrimSpace(msg))}
}

// hostError is "PATH: what the host said", or "PATH: file does not exist".
type hostError struct {
	path, msg string
	err       error
}

func (e *hostError) Error() string {
	if e.err != nil {
		return e.path + ": " + e.err.Error()
	}
	return e.path + ": " + e.msg
}

func (e *hostError) Unwrap() error { return e.err }

// parseBatch reads the script's output. A record it cannot read ends the
// parse with an error; the answers before it stand.
func parseBatch(out []byte, nonce string) (*answers, error) {
	return parseBatchOf(out, &Batch{nonce: nonce}, nil)
}

// parseBatchOf is parseBatch of b's answer, which also answers b's
// handles; an agent's paths may be its aliases: "\x01N" is names[N].
func parseBatchOf(out []byte, b *Batch, names []string) (*answers, error) {
	a, err := parseRecords(out, b, names)
	b.setCats(a)
	for _, g := range b.globs {
		if r, ok := a.globs[path.Clean(g.pattern)]; ok {
			g.res, g.ok = GlobResult{Paths: r.paths, Err: r.err}, true
		}
	}
	for _, r := range b.reals {
		if l, ok := a.real[path.Clean(r.path)]; ok {
			r.res, r.ok = PathResult{Path: l.target, Err: l.err}, true
		}
	}
	for _, p := range b.procs {
		p.set(a)
	}
	b.poll.set(a)
	return a, err
}

func parseRecords(out []byte, b *Batch, names []string) (*answers, error) {
	nonce := b.nonce
	// sized by the ops: a steady poll of 50,000 categories has a stat and a
	// count a file, and a map grown to that splits its tables again and again
	a := &answers{stats: make(map[string]statAns, len(b.ops)), reads: map[string][]readAns{}, globs: map[string]globAns{},
		counts: make(map[string]countAns, len(b.ops)), execs: map[string]ExecResult{}, links: map[string]linkAns{}, real: map[string]linkAns{}, digest: map[string][]byte{}, starts: map[string][]byte{}}
	if i := bytes.Index(out, []byte("@H "+nonce+"\n")); i >= 0 {
		out = out[i+len("@H "+nonce+"\n"):] // what a login shell's rc printed before the script ran
		if z, ok := bytes.CutPrefix(out, []byte("@Z "+nonce+"\n")); ok {
			var err error
			if out, err = gunzipBounded(z, MaxExecOutput); err != nil {
				return a, fmt.Errorf("batch: its gzip'd records: %w", err)
			}
		}
	} else if len(out) > 0 && out[0] != '@' {
		// no hello (an agent's answers have none): the nonce after each
		// record keeps junk from passing for one
		if i := bytes.Index(out, []byte("\n@")); i >= 0 {
			out = out[i+1:]
		}
	}
	for len(out) > 0 {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 || out[0] != '@' {
			return a, fmt.Errorf("batch: bad record at %q", head(out))
		}
		f := bytes.Fields(out[1:nl])
		if len(f) != 7 {
			return a, fmt.Errorf("batch: bad header %q", out[:nl])
		}
		var num [5]int64
		for i := range num {
			v, err := strconv.ParseInt(string(f[i+2]), 10, 64)
			if err != nil || v < 0 && i >= 3 {
				return a, fmt.Errorf("batch: bad header %q", out[:nl])
			}
			num[i] = v
		}
		plen, dlen := num[3], num[4]
		body := out[nl+1:]
		if plen > int64(len(body)) || dlen > int64(len(body))-plen {
			return a, fmt.Errorf("batch: record %q cut short (its file changed while read, or could not be read)", out[:nl])
		}
		end := body[plen+dlen:]
		if !bytes.HasPrefix(end, []byte(nonce+"\n")) {
			return a, fmt.Errorf("batch: record %q cut short (its file changed while read, or could not be read)", out[:nl])
		}
		p, data := string(body[:plen]), body[plen:plen+dlen]
		if len(p) > 1 && p[0] == 1 {
			if i, err := strconv.Atoi(p[1:]); err == nil && i >= 0 && i < len(names) {
				p = names[i]
			}
		}
		out = end[len(nonce)+1:]
		a.add(string(f[0]), string(f[1]), num[:3], p, data, b)
	}
	return a, nil
}

func head(b []byte) []byte { return b[:min(len(b), 40)] }

// gunzipBounded inflates the fallback's gzip'd records, at most max bytes
// of them: a host cannot make the laptop hold more than an exec's output.
func gunzipBounded(z []byte, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	// sized once by the size gzip's trailer names (mod 2^32), not grown by
	// doubling: a fresh page costs a fault, and growing 1.3 MB of records
	// touched three times that (7 of a cold status's 131 ms of CPU). The
	// trailer is the host's word: at most 32 times the bytes that came
	// (log text inflates 4 to 10 times; past that the buffer grows).
	var out bytes.Buffer
	if len(z) >= 18 {
		if size := int64(binary.LittleEndian.Uint32(z[len(z)-4:])); size > 0 {
			out.Grow(int(min(size, max, 32*int64(len(z))) + bytes.MinRead))
		}
	}
	n, err := io.Copy(&out, io.LimitReader(zr, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, fmt.Errorf("over %d bytes inflated", max)
	}
	return out.Bytes(), nil
}

func (a *answers) add(kind, status string, num []int64, p string, data []byte, b *Batch) {
	failed := status == "noent" || status == "err"
	var err error
	if failed {
		err = batchError(status, p, data)
	}
	switch kind {
	case "M":
		a.addTable(p, data, b)
		return
	case "X", "Y":
	default:
		p = path.Clean(p)
	}
	switch kind {
	case "S":
		fi := FileInfo{Name: path.Base(p), Size: num[0], ModTime: time.Unix(num[1], 0), IsDir: status == "d"}
		switch status {
		case "d":
			fi.Mode = fs.ModeDir
		case "p":
			fi.Mode = fs.ModeNamedPipe
		case "o": // none of those: the answer does not say what it is
			fi.Mode = fs.ModeIrregular
		}
		a.stats[p] = statAns{fi: fi, err: err}
	case "R":
		a.reads[p] = append(a.reads[p], readAns{off: num[0], data: data, eof: num[1] == 1, err: err})
	case "G":
		var ps []string
		for _, m := range bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0}) {
			if len(m) > 0 {
				ps = append(ps, string(m))
			}
		}
		a.globs[p] = globAns{paths: ps, err: err}
	case "N":
		c := countAns{from: num[0], n: num[1], lines: num[2]}
		if failed {
			c.err = string(bytes.TrimSpace(data))
		}
		a.counts[p] = c
	case "X":
		i, perr := strconv.Atoi(p)
		if perr != nil || i < 0 || i >= len(b.execs) || num[1] < 0 || num[1] > int64(len(data)) {
			return
		}
		b.setExec(a, i, ExecResult{Stdout: data[:num[1]], Stderr: data[num[1]:], ExitCode: int(num[0])})
	case "Y":
		i, perr := strconv.Atoi(p)
		if perr != nil || i < 0 || i >= len(b.thens) || num[1] < 0 || num[1] > int64(len(data)) {
			return
		}
		b.setThen(a, i, ExecResult{Stdout: data[:num[1]], Stderr: data[num[1]:], ExitCode: int(num[0])}, num[2])
	case "L":
		a.links[p] = linkAns{target: string(data), err: err}
	case "P":
		a.real[p] = linkAns{target: string(data), err: err}
	case "U":
		a.unpack = unpackAns{said: true, ok: num[0] == 1}
	case "D":
		if !failed {
			a.digest[p] = append([]byte{}, data...)
		}
	case "E":
		if !failed {
			a.starts[p] = append([]byte{}, data...)
		}
	}
}

// addTable answers the records of an M record, the fallback's last: a
// table of entries "KIND STATUS A B C N1 N2 PATH", each ended by a NUL,
// then their bytes one after another (N1 and N2 of them an entry's). Each
// is the record its first six fields make, but E (a file counted whole
// by the one wc: A and B its sizes at the fallback's two stats) and T (the
// one tail of those files: N1 its bytes), from which each E file whose
// size held gets its end. A table that does not add up answers nothing:
// the parts read for themselves.
func (a *answers) addTable(list string, data []byte, b *Batch) {
	var es []tableEntry
	left := int64(len(data))
	for _, e := range strings.Split(strings.TrimSuffix(list, "\x00"), "\x00") {
		f := strings.SplitN(e, " ", 8)
		if len(f) != 8 {
			return
		}
		en := tableEntry{kind: f[0], status: f[1], path: f[7]}
		for i := range en.num {
			v, err := strconv.ParseInt(f[i+2], 10, 64)
			if err != nil || v < 0 && i >= 3 {
				return
			}
			en.num[i] = v
		}
		if en.num[3] > left || en.num[4] > left-en.num[3] {
			return
		}
		left -= en.num[3] + en.num[4]
		es = append(es, en)
	}
	if left != 0 {
		return
	}
	var ends []tableEntry
	for _, e := range es {
		n := e.num[3] + e.num[4]
		d := data[:n]
		data = data[n:]
		switch e.kind {
		case "E":
			ends = append(ends, e)
		case "T":
			a.addEnds(ends, d, b)
			ends = nil
		case "M": // none is nested
		default:
			a.add(e.kind, e.status, e.num[:3], e.path, d, b)
		}
	}
}

// tableEntry is an entry of an M record: its fields, and its path.
type tableEntry struct {
	kind, status, path string
	num                [5]int64
}

// endMax is the most of a file's end the fallback's one tail reads.
const endMax = 4096

// addEnds answers the end of each file the fallback's one tail read
// ("==> PATH <==", a file's last endMax bytes, a blank line before the
// next; fallback.sh's grp N) whose size held between its two stats: its
// last 129 bytes when they end a line, else all endMax (a cut last line's
// start too), the end a count keeps for its next overlap. It stops at a
// section it cannot place (a size that moved under endMax).
func (a *answers) addEnds(ends []tableEntry, out []byte, b *Batch) {
	for i, e := range ends {
		h := "==> " + e.path + " <==\n"
		if i > 0 {
			h = "\n" + h
		}
		s1, s2 := e.num[0], e.num[1]
		n := min(endMax, s1)
		if s1 < 0 || !bytes.HasPrefix(out, []byte(h)) || s1 != s2 && s1 < endMax || int64(len(out)-len(h)) < n {
			return
		}
		sec := out[len(h) : int64(len(h))+n]
		out = out[int64(len(h))+n:]
		if s1 != s2 || n == 0 {
			continue // read by itself (endone)
		}
		k := n
		if sec[n-1] == '\n' {
			k = min(129, n)
		}
		a.add("R", "ok", []int64{s1 - k, 1, 0}, e.path, sec[n-k:], b)
	}
}

// fallbackSrc is the one-shot batch (host/fallback.sh): the one reader of a
// host where no Go agent answers. Its comments stay in the file: what
// crosses the link is the code (shCode).
//
//go:embed host/fallback.sh
var fallbackSrc string

// batchOnce is fallback.sh as it runs.
var batchOnce = shCode(fallbackSrc)
