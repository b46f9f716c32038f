package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A poll's small shell programs (the host's zone, who owns pipeline.toml,
// the processes holding the night's files, the host's vitals) are read by
// the Go agent in Go, not by an sh and its children: on a two-core host
// a fork costs milliseconds, and the four took about 45 ms of a cold
// status's 95 ms request. The fallback runs the programs; their argv is
// the request, and TestAgentAnswersAsTheShell runs both on the host and
// wants one answer. Where Go cannot say the same (a user only NSS names,
// a TZ rule, a pattern with a bracket), the program runs.

// ZoneArgv prints the host's UTC offset and, where it has one, the name
// of its zone (the /etc/localtime link).
var ZoneArgv = []string{"sh", "-c", zoneScript}

const zoneScript = `date +%z; readlink /etc/localtime 2>/dev/null || true`

// OwnerArgv prints the session user's uid and name, then p's owner uid,
// owner name and mode in octal (GNU and BusyBox stat).
func OwnerArgv(p string) []string { return []string{"sh", "-c", ownerScript, ownerName, p} }

// ownerScript is one stat where /proc is: /proc/self/ is the stat's own
// process, owned by the session user (two id runs, a fork and an exec
// each, and their NSS lookups, spared); elsewhere id says.
const (
	ownerScript = `nl='
'
if [ -d /proc/self/ ]; then
o=$(stat -L -c '%u %U %a' -- /proc/self/ "$1"); c=$?
me=${o%%"$nl"*} r=${o#*"$nl"}
case $me in [0-9]*' '*' '*) ;; *) exit 1;; esac
u=${me%% *} me=${me#* }
printf '%s\n%s\n' "$u" "${me% *}"
[ "$r" = "$o" ] || printf '%s\n' "$r"
exit "$c"
fi
id -u && id -un && stat -L -c '%u %U %a' -- "$1"`
	ownerName = "synthwatch-trust"
)

// VitalsArgv is the host's health (host/vitals.sh): ROOT's disk when
// disk, the worker's (pid, or 0) CPU and memory.
func VitalsArgv(root string, pid int, disk bool) []string {
	d := "0"
	if disk {
		d = "1"
	}
	return []string{"sh", "-c", vitalsScript, "sh", root, strconv.Itoa(pid), d}
}

var vitalsScript = HostScript("vitals.sh")

// answerNative answers argv in Go when it is one of those programs and Go
// says what it would (ok false: run it).
func answerNative(ctx context.Context, argv []string) (code int, stdout, stderr []byte, ok bool) {
	if runtime.GOOS != "linux" || len(argv) < 3 || argv[0] != "sh" || argv[1] != "-c" {
		return 0, nil, nil, false
	}
	switch argv[2] {
	case zoneScript:
		if len(argv) == 3 && os.Getenv("TZ") == "" { // a TZ rule is date's to read
			if out, ok := zoneNow(); ok {
				return 0, out, nil, true
			}
		}
	case ownerScript:
		if len(argv) == 5 && argv[3] == ownerName {
			if out, ok := ownerOf(argv[4]); ok {
				return 0, out, nil, true
			}
		}
	case holdersScript:
		if len(argv) >= 6 && argv[3] == "synthwatch-holders" {
			if out, ok := holdersOf(argv[4:]); ok {
				return 0, out, nil, true
			}
		}
	case vitalsScript:
		if len(argv) == 7 && argv[3] == "sh" {
			return 0, vitalsOf(ctx, argv[4], argv[5], argv[6]), nil, true
		}
	}
	return 0, nil, nil, false
}

// zoneNow is date +%z and the /etc/localtime link.
// zoneNow is zoneScript's answer: the offset in the zone /etc/localtime
// names now, not the one it named when the agent started (a host whose
// zone is set again while a dashboard watches: date reads it each time);
// ok false where Go cannot load the new zone (then date runs).
func zoneNow() ([]byte, bool) {
	l, err := os.Readlink(localtimePath)
	loc := time.Local
	if err == nil {
		zones.Lock()
		if zones.link == "" {
			zones.link, zones.loc = l, time.Local // the zone the agent started in
		}
		if l != zones.link {
			i := strings.LastIndex(l, "zoneinfo/")
			if i < 0 {
				zones.Unlock()
				return nil, false
			}
			nl, err := time.LoadLocation(l[i+len("zoneinfo/"):])
			if err != nil {
				zones.Unlock()
				return nil, false
			}
			zones.link, zones.loc = l, nl
		}
		loc = zones.loc
		zones.Unlock()
	}
	out := time.Now().In(loc).Format("-0700") + "\n"
	if err == nil {
		out += l + "\n"
	}
	return []byte(out), true
}

// localtimePath is the host's zone link (a variable for the test).
var localtimePath = "/etc/localtime"

// zones is the zone the link named when last read, and its location.
var zones struct {
	sync.Mutex
	link string
	loc  *time.Location
}

// ownerOf is ownerScript's answer, when the users are named in
// /etc/passwd (else, or when p cannot be stated, the script says it).
func ownerOf(p string) ([]byte, bool) {
	me, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		return nil, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, false
	}
	o, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
	if err != nil {
		return nil, false
	}
	return fmt.Appendf(nil, "%d\n%s\n%d %s %o\n", os.Getuid(), me.Username, st.Uid, o.Username, st.Mode&0o7777), true
}

// holdersOf is holders.sh's answer to "-lname P [-o -lname P]…": every
// /proc/PID/fd/N whose link matches, as "PID FD FLAGS TARGET".
func holdersOf(args []string) ([]byte, bool) {
	var pats []*regexp.Regexp
	for i := 0; i < len(args); i++ {
		if args[i] == "-o" && i > 0 {
			continue
		}
		if args[i] != "-lname" || i+1 >= len(args) {
			return nil, false
		}
		re, err := fnmatchRegexp(args[i+1])
		if err != nil {
			return nil, false
		}
		pats = append(pats, re)
		i++
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	for _, p := range procs {
		pid := p.Name()
		if pid == "" || pid[0] < '0' || pid[0] > '9' {
			continue
		}
		fds, err := os.ReadDir("/proc/" + pid + "/fd")
		if err != nil {
			continue // another user's, or gone: find says nothing of it either
		}
		for _, fd := range fds {
			f := "/proc/" + pid + "/fd/" + fd.Name()
			t, err := os.Readlink(f)
			if err != nil || !slices.ContainsFunc(pats, func(re *regexp.Regexp) bool { return re.MatchString(t) }) {
				continue
			}
			fmt.Fprintf(&b, "%s %s %s %s\n", pid, fd.Name(), fdFlags(pid, fd.Name()), t)
		}
	}
	return b.Bytes(), true
}

// fdFlags is the octal flags of a descriptor's fdinfo, "0" unread.
func fdFlags(pid, fd string) string {
	b, err := readUpTo("/proc/"+pid+"/fdinfo/"+fd, 4096)
	if err != nil {
		return "0"
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return "0"
}

// fnmatchRegexp is find -lname's pattern (fnmatch, no flags: * and ?
// match a slash too; \ quotes) as a regexp; a bracket is refused.
func fnmatchRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			return nil, errors.New("a bracket")
		case '\\':
			if i+1 < len(p) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// vitalsOf is vitals.sh's answer: its sections, each as the script
// prints it ("@@sw NAME RC", then the output).
func vitalsOf(ctx context.Context, root, pid, disk string) []byte {
	var b bytes.Buffer
	sec := func(name string, rc int, out string) {
		fmt.Fprintf(&b, "@@sw %s %d\n%s\n", name, rc, strings.TrimRight(out, "\n")) // $(…) drops the newlines
	}
	if nv, err := exec.LookPath("nvidia-smi"); err == nil {
		for _, q := range [][2]string{{"gpu", "--query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,uuid"},
			{"apps", "--query-compute-apps=gpu_uuid,pid,used_memory"}} {
			rc, out := runFor(ctx, 3*time.Second, nv, q[1], "--format=csv,noheader,nounits")
			sec(q[0], rc, out)
		}
	}
	line := func(p string) (int, string) { // the shell's read of a line
		b, err := readUpTo(p, 64<<10)
		if err != nil {
			return 1, ""
		}
		l, _, nl := strings.Cut(string(b), "\n")
		if !nl {
			return 1, l
		}
		return 0, l
	}
	grep := func(p string, keep func(string) bool) (int, string) {
		b, err := readUpTo(p, 4<<20)
		if err != nil {
			return 2, "grep: " + err.Error()
		}
		var out []string
		for l := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			if keep(l) {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return 1, ""
		}
		return 0, strings.Join(out, "\n")
	}
	rc, o := line("/proc/loadavg")
	sec("load", rc, o)
	rc, o = grep("/proc/meminfo", func(l string) bool {
		return strings.HasPrefix(l, "MemTotal:") || strings.HasPrefix(l, "MemAvailable:")
	})
	sec("mem", rc, o)
	if disk == "1" {
		rc, o = dfOf(ctx, root)
		sec("df", rc, o)
	}
	if n, err := strconv.Atoi(pid); err == nil && n > 0 {
		rc, o = line("/proc/uptime")
		sec("uptime", rc, o)
		rc, o = line("/proc/" + pid + "/stat")
		sec("stat", rc, o)
		rc, o = grep("/proc/"+pid+"/status", func(l string) bool { return strings.HasPrefix(l, "VmRSS:") })
		sec("status", rc, o)
		sec("clk", 0, "100") // getconf CLK_TCK: USER_HZ, 100 on Linux
	}
	return b.Bytes()
}

// runFor runs a command for at most d, as timeout(1) would: its exit
// status (124 when it ran out) and its output, both streams.
func runFor(ctx context.Context, d time.Duration, name string, args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if ctx.Err() != nil {
		return 124, string(out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		return 127, err.Error()
	}
	return 0, string(out)
}

// dfOf is df -P -B1 of root: its header and its filesystem's line (the
// name is not read: "-"), within 3 s as the script's timeout gives df (a
// hung network mount: 124, the statfs left to end on its own).
func dfOf(ctx context.Context, root string) (int, string) {
	type res struct {
		s   syscall.Statfs_t
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var r res
		r.err = syscall.Statfs(root, &r.s)
		ch <- r
	}()
	var s syscall.Statfs_t
	select {
	case r := <-ch:
		if r.err != nil {
			return 1, "df: " + root + ": " + r.err.Error()
		}
		s = r.s
	case <-time.After(3 * time.Second):
		return 124, ""
	case <-ctx.Done():
		return 124, ""
	}
	bs := int64(s.Frsize)
	if bs == 0 {
		bs = int64(s.Bsize)
	}
	total, avail := int64(s.Blocks)*bs, int64(s.Bavail)*bs
	used := total - int64(s.Bfree)*bs
	pct := "-"
	if used+avail > 0 {
		pct = strconv.FormatInt((used*100+used+avail-1)/(used+avail), 10)
	}
	return 0, fmt.Sprintf("Filesystem 1-blocks Used Available Capacity Mounted on\n- %d %d %d %s%% %s", total, used, avail, pct, root)
}
