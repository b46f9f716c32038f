package remote

import (
	"bufio"
	"bytes"
	"io"

	"github.com/synthwatch/synthwatch/parse"
)

// A server log's start lines open the eras its records are placed in
// (parse.Eras), and may be far before the tail's history (256 KB back): on
// a first read of a server log the agent scans the bytes before the
// history for them and sends them as an E record (data: the lines, each
// cut at parse.DefaultMaxLine, the newest parse.MaxLaunches within 1 MB).
// The scan is a byte search over the file's head, once per first attach;
// the steady poll reads the log's new lines from the tail as before. The fallback
// sends none: records before the first start in its 256 KB are of
// unknown config.

// launchHeads are the starts' heads (parse.ParseLaunch's).
var launchHeads = [][]byte{[]byte("server_args=ServerArgs("), []byte("server_args={"), []byte("non-default args: {")}

// starts writes p's S record: the start lines of [0, before).
func (r *recorder) starts(p string, before int64) {
	if before <= 0 {
		return
	}
	f, err := openRegular(p)
	if err != nil {
		return
	}
	defer f.Close()
	r.rec("E", "ok", 0, before, 0, p, startLines(io.NewSectionReader(f, 0, before)))
}

// startLines are the start lines of rd, newline-ended.
func startLines(rd io.Reader) []byte {
	br := bufio.NewReaderSize(rd, 1<<20)
	var keep [][]byte
	var long []byte
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long) < parse.DefaultMaxLine {
				long = append(long, l...)
			}
			continue
		}
		if long != nil {
			l = append(long, l...)
			long = nil
		}
		if err != nil {
			break // EOF: an unfinished last line is the history's
		}
		if isStart(l) {
			line := bytes.TrimRight(l[:min(len(l), parse.DefaultMaxLine)], "\r\n")
			keep = append(keep, append(bytes.Clone(line), '\n'))
			if len(keep) > parse.MaxLaunches {
				keep = keep[1:]
			}
		}
	}
	n := 0
	for i := len(keep) - 1; i >= 0; i-- { // the newest, within maxStartBytes
		if n += len(keep[i]); n > maxStartBytes {
			keep = keep[i+1:]
			break
		}
	}
	return bytes.Join(keep, nil)
}

// maxStartBytes bounds the E record whatever a log holds (a start line
// is a few kilobytes).
const maxStartBytes = 1 << 20

func isStart(l []byte) bool {
	for _, h := range launchHeads {
		if bytes.Contains(l, h) {
			return true
		}
	}
	return false
}

// TailStarts is a local server log's start lines, scanned from its whole
// file at a first attach as the agent scans a host's (status --local, the
// dashboard on the host): the tail's history holds only the last 256 KB.
func (Local) TailStarts(name string) ([]string, bool) {
	f, err := openRegular(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var out []string
	for _, l := range bytes.Split(startLines(f), []byte{'\n'}) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out, true
}

// tailStarter is a reader that may hold a server log's start lines
// before a first attach's history (Local.TailStarts; the agent's are
// its answer's, fileAns.startLines).
type tailStarter interface {
	TailStarts(path string) ([]string, bool)
}
