package pipeline

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// A first read's thousands of worker lines parse on every core into what
// the fold would have parsed line by line, in order.
func TestParseWorkerLinesIsOneByOne(t *testing.T) {
	var ls []remote.Line
	for i := range 9001 {
		switch i % 7 {
		case 0:
			ls = append(ls, remote.Line{Text: fmt.Sprintf("Processing: B%d_glaive (SHORT)", i)})
		case 3:
			ls = append(ls, remote.Line{Text: "Traceback (most recent call last):"})
		default:
			ls = append(ls, remote.Line{Text: fmt.Sprintf("%d/9001 (%d err) 9.8 req/s avg_comp=248tok ETA=6m", i, i/100)})
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))) // two at least, on any machine
	got := parseWorkerLines(ls)
	if got == nil {
		t.Fatal("9,001 lines were not parsed apart")
	}
	for i, l := range ls {
		if want := parse.ParseWorkerLine(l.Text); !reflect.DeepEqual(got[i], want) {
			t.Fatalf("line %d: %+v, want %+v", i, got[i], want)
		}
	}
	if parseWorkerLines(ls[:100]) != nil {
		t.Error("a poll's few lines were parsed apart")
	}
}
