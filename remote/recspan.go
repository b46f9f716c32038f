package remote

import (
	"bytes"
	_ "embed"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The times of a running category's last records witness its rate at
// first sight (parse.WitnessedRate), when neither worker.json nor the log
// does: the old script relaunched without PYTHONUNBUFFERED logs nothing
// and dates every record. RecordSpanArgv asks the host for them in the
// poll's one request, as an exec: the fallback runs recSpanScript (POSIX
// sh cannot parse JSON, so it prints each file's last
// parse.RecordTailFallback bytes, whole lines or not), the Go agent
// answers it in Go (recordSpans: the figures of parse.TailRecordSpan over
// the last parse.RecordTailMax bytes, never the bytes), and the laptop
// reads either answer by ParseRecordSpans.

// recSpanName names the exec: the agent answers argv[3] == recSpanName.
const recSpanName = "synthwatch-recspan"

// recSpanScript: MARK MAX AGE DIR NAME [CAT…]: for each DIR/CAT/NAME (every
// DIR/*/NAME with no CAT) modified less than AGE seconds ago, "@B CUT CAT"
// (CUT 1: the bytes begin mid-file), its last MAX bytes (4 MAX where MAX
// holds fewer than 3 whole records: long completions), then a line of
// MARK.
//
//go:embed host/recspan.sh
var recSpanSrc string

// recSpanScript is recspan.sh as it runs (its comments stay in the file).
var recSpanScript = shCode(recSpanSrc)

// RecordSpanArgv asks for the last records of dir/CAT/name for each of
// cats (every category folder under dir when none is named) whose file
// was modified within age: mark ends each file's bytes in the fallback's
// answer (a session's random word, so no record is read as it).
func RecordSpanArgv(mark string, dir, name string, age time.Duration, cats ...string) []string {
	argv := []string{"sh", "-c", recSpanScript, recSpanName, mark, strconv.Itoa(parse.RecordTailFallback),
		strconv.FormatInt(max(int64(age/time.Second), 1), 10), dir, name}
	return append(argv, cats...)
}

// ParseRecordSpans reads RecordSpanArgv's answer, the agent's figures
// ("@S RECORDS FIRST LAST CAT", Unix nanoseconds) or the fallback's bytes,
// which it reads as the agent does (parse.TailRecordSpan; a zone-less
// time in loc, the host's zone).
func ParseRecordSpans(out []byte, mark string, loc *time.Location, now time.Time) map[string]parse.RecordSpan {
	spans := map[string]parse.RecordSpan{}
	end := []byte("\n" + mark + "\n")
	for len(out) > 0 {
		nl := bytes.IndexByte(out, '\n')
		if nl < 0 {
			break
		}
		head := string(out[:nl])
		out = out[nl+1:]
		switch {
		case strings.HasPrefix(head, "@S "):
			f := strings.SplitN(head[3:], " ", 4)
			if len(f) != 4 {
				continue
			}
			n, e1 := strconv.ParseInt(f[0], 10, 64)
			a, e2 := strconv.ParseInt(f[1], 10, 64)
			b, e3 := strconv.ParseInt(f[2], 10, 64)
			if e1 == nil && e2 == nil && e3 == nil && n > 0 {
				spans[f[3]] = parse.RecordSpan{Records: n, First: time.Unix(0, a), Last: time.Unix(0, b)}
			}
		case strings.HasPrefix(head, "@B ") && mark != "":
			i := bytes.Index(out, end)
			if i < 0 {
				return spans // cut short: what came before stands
			}
			data := out[:i]
			out = out[i+len(end):]
			cut, cat, ok := strings.Cut(head[3:], " ")
			if ok {
				spans[cat] = parse.TailRecordSpan(data, cut != "0", loc, now)
			}
		}
	}
	return spans
}

// answerRecordSpans answers RecordSpanArgv in Go (ok false: argv is
// another command): for each file the script would print, its span's
// figures.
func answerRecordSpans(argv []string) (out []byte, ok bool) {
	if len(argv) < 9 || argv[0] != "sh" || argv[1] != "-c" || argv[3] != recSpanName {
		return nil, false
	}
	age, err := strconv.ParseInt(argv[6], 10, 64)
	if err != nil {
		return nil, false
	}
	dir, name, cats := argv[7], argv[8], argv[9:]
	if len(cats) == 0 {
		files, _ := filepath.Glob(filepath.Join(GlobEscape(dir), "*", GlobEscape(name)))
		for _, f := range files {
			cats = append(cats, filepath.Base(filepath.Dir(f)))
		}
	}
	now := time.Now()
	var b bytes.Buffer
	for _, c := range cats {
		if c == "" || strings.Contains(c, "\n") {
			continue // as the script: its answer is one line
		}
		s, ok := fileRecordSpan(filepath.Join(dir, c, name), now, time.Duration(age)*time.Second)
		if ok && s.Records > 0 {
			fmt.Fprintf(&b, "@S %d %d %d %s\n", s.Records, s.First.UnixNano(), s.Last.UnixNano(), c)
		}
	}
	return b.Bytes(), true
}

// fileRecordSpan is the span of p's last parse.RecordTailMax bytes, when p
// is a regular file modified within age.
func fileRecordSpan(p string, now time.Time, age time.Duration) (parse.RecordSpan, bool) {
	f, err := openRegular(p)
	if err != nil {
		return parse.RecordSpan{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || now.Sub(fi.ModTime()) >= age {
		return parse.RecordSpan{}, false
	}
	data, cut, err := parse.ReadRecordTail(f, fi.Size())
	if err != nil {
		return parse.RecordSpan{}, false
	}
	return parse.TailRecordSpan(data, cut, time.Local, now), true
}
