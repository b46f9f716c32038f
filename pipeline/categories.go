package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// counts is the categories' part of a poll: the manifest and prepared/*/
// that name them, the line counts of their files with the tokens of the
// bytes those counts read (and the sums the host ran for the rest), and
// their runs.jsonl; with what each category's log lines and worker.json
// say of it, kept per category (catState) between polls.
type counts struct {
	lay        parse.Layout
	history    int           // samples kept per category
	stallAfter time.Duration // Options.StallAfter: a log rate older than it is none
	tl         *Timeline     // category_done events give a class its rate

	cats        map[string]*catState
	order       []string
	manifest    parse.Manifest
	haveMan     bool
	manErr      error              // why pipeline.toml could not be read or parsed (nil: read, or none)
	thens       map[string]*tokJob // by category: the token sums the batch's counts on the host ran
	agentCounts bool               // the counters count on the host above agentRemoteAbove
	classRates  map[string]float64 // newest measured rate per class (per minute)
}

func (k *counts) cat(name string) *catState {
	c, ok := k.cats[name]
	if !ok {
		c = k.newCat(name)
		k.cats[name] = c
		k.order = append(k.order, name)
	}
	return c
}

// newCat is a category's state before its first poll.
func (k *counts) newCat(name string) *catState {
	l := k.lay
	c := &catState{name: name, class: "SHORT",
		raw:     remote.NewCounter(l.Raw(name)),
		errs:    remote.NewCounter(l.Errors(name)),
		prompts: remote.NewCounter(l.Prompts(name)),
		runs:    remote.NewTail(l.Runs(name)),
		rates:   newSamples(k.history)}
	c.runs.StartBack = 16 << 20
	c.raw.OnRead = c.tok.onRead // tokens from the bytes the count reads anyway
	return c
}

// discover finds categories from the manifest and prepared/*/ folders;
// parsed: pipeline.toml was read and parsed by this call.
func (k *counts) discover(ctx context.Context, rd remote.Host) (parsed bool, err error) {
	if !k.haveMan {
		mp := k.lay.Manifest()
		data, err := rd.ReadAt(ctx, mp, 0, 1<<20)
		k.manErr = nil
		switch {
		case err == nil:
			m, perr := parse.ParseManifest(data)
			if perr != nil {
				// read again on every full poll, until it parses: a fix is seen
				k.manErr = fmt.Errorf("%s: %w", mp, perr)
				break
			}
			k.manifest = m
			k.haveMan = true
			parsed = true
		case errors.Is(err, fs.ErrNotExist):
			k.haveMan = true
		case remote.IsFileError(err):
			// the host answered and the file is bad (EACCES, a FIFO, a
			// directory): said in every view, and the categories are
			// still found from prepared/*/
			k.manErr = fmt.Errorf("%s", remote.FileErrText(mp, err))
		default:
			return false, err
		}
	}
	for _, s := range k.manifest.Categories {
		c := k.cat(s.Name)
		if s.Class != "" {
			c.class = s.Class
		}
		c.budget, c.maxSamples = s.TokenBudget, s.MaxSamples
	}
	var found []string
	glob := parse.Layout{Root: remote.GlobEscape(k.lay.Root)}
	for _, pat := range []string{glob.Prompts("*"), glob.Raw("*")} {
		m, err := rd.Glob(ctx, pat)
		if err != nil {
			return false, err
		}
		for _, p := range m {
			found = append(found, path.Base(path.Dir(p)))
		}
	}
	sort.Strings(found)
	for _, n := range found {
		k.cat(n)
	}
	return parsed, nil
}
