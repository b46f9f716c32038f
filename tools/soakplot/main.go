// Command soakplot draws docs/soak.png from the docs/soak.csv that TestSoak
// writes (SW_SOAK=30m SW_SOAK_WRITE=1 go test ./cmd/synthwatch -run Soak).
// It is its own module, so the plotting library is no dependency of
// synthwatch:
//
//	cd tools/soakplot && go run . -night 30m ../../docs/soak.csv ../../docs/soak.png
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func main() {
	night := flag.String("night", "30m", "the soak's length, for the title")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: soakplot [-night 30m] soak.csv soak.png")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *night); err != nil {
		fmt.Fprintln(os.Stderr, "soakplot:", err)
		os.Exit(1)
	}
}

func run(in, out, night string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return err
	}
	if len(rows) < 2 {
		return fmt.Errorf("%s: no samples", in)
	}
	// seconds,rss_mb,goroutines,open_fds,log_lines_fed
	var rss, gor, fds plotter.XYs
	for i, r := range rows[1:] {
		if len(r) < 4 {
			return fmt.Errorf("%s:%d: %d fields, want 5", in, i+2, len(r))
		}
		var v [4]float64
		for k := range v {
			if v[k], err = strconv.ParseFloat(r[k], 64); err != nil {
				return fmt.Errorf("%s:%d: %w", in, i+2, err)
			}
		}
		x := v[0] / 60
		rss = append(rss, plotter.XY{X: x, Y: v[1]})
		gor = append(gor, plotter.XY{X: x, Y: v[2]})
		fds = append(fds, plotter.XY{X: x, Y: v[3]})
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("synthwatch dashboard, %s accelerated night (polls every 100 ms, 100 log lines/s)", night)
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = "RSS (MB) / goroutines / open fds"
	if err := plotutil.AddLinePoints(p, "RSS MB", rss, "goroutines", gor, "open fds", fds); err != nil {
		return err
	}
	return p.Save(10*vg.Inch, 5*vg.Inch, out)
}
