package remote

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// writableScript tells why a directory cannot take a file (host/writable.sh).
var writableScript = HostScript("writable.sh")

// WhyNotWritable asks the host what stops dir from taking size bytes of
// what (a noun: "the binary", "the agent"): a read-only file system, a
// directory the user may not write (an unwritable or missing HOME), a
// full disk; "" when it cannot tell. Deploy and the agent's install say
// it in place of an SFTP "Failure" or a mkdir's bare exit.
func WhyNotWritable(ctx context.Context, h Host, dir string, size int64, what string) string {
	r, err := h.Exec(ctx, "sh", "-c", writableScript, "synthwatch-deploy", dir)
	if err != nil {
		return ""
	}
	why := ""
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		f := strings.Split(l, "\t")
		switch {
		case f[0] == "@ro" && len(f) == 2:
			why = fmt.Sprintf("%s is on a read-only file system (mounted at %s)", dir, f[1])
		case f[0] == "@nowrite" && len(f) == 3 && why == "":
			why = fmt.Sprintf("%s cannot be written by %s (%s)", existing(r.Stdout, dir), f[1], f[2])
		case f[0] == "@df" && len(f) == 3 && why == "":
			free, _ := strconv.ParseInt(f[1], 10, 64)
			total, _ := strconv.ParseInt(f[2], 10, 64)
			if free*1024 < size+1<<20 {
				why = fmt.Sprintf("the file system holding %s has no room for %s: %d KB free of %d KB, and it needs %d KB (df -k)", dir, what, free, total, (size+1023)/1024)
			}
		}
	}
	return parse.SanitizeString(why)
}

// existing is the nearest existing directory writableScript found, said
// as what it is to dir (dir itself, or the ancestor where it stops).
func existing(out []byte, dir string) string {
	for _, l := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(l, "@dir\t"); ok && d != dir {
			return fmt.Sprintf("%s does not exist, and %s", dir, d)
		}
	}
	return dir
}
