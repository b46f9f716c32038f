package digest

import "github.com/synthwatch/synthwatch/parse"

// Provenance, as status's (parse.ConfigCounts): each category's records by
// run, the old script's (no run) by minute of their own time
// (parse.RecordTimes), placed in the eras of the server log's start lines
// (parse.Eras), which the digest reads whole.

// provAcc is a category's evidence for its provenance.
type provAcc struct {
	runLines []parse.RunLine
	byRun    parse.RunRecords
	times    parse.RecordTimes
}

// noteRecord counts one record by run, and a run-less one by its time.
func (p *provAcc) noteRecord(st parse.RecordStamp) {
	one := parse.OneRecord(st.CompletionTokens, st.HasTokens)
	p.byRun.Add(st.Run, one)
	if st.Run == "" {
		p.times.Add(st.Finished, st.HasFinished, one)
	}
}

// noteLaunch keeps a dated start line of the server log.
func (d *digester) noteLaunch(r serverRecord) {
	if r.ev.Startup.Stage != "launch" || !r.dated {
		return
	}
	if set, ok := parse.ParseLaunch(r.ev.Msg); ok {
		d.launches = append(d.launches, parse.ServerLaunch{At: r.t, Settings: set})
		if len(d.launches) > parse.MaxLaunches {
			d.launches = d.launches[1:]
		}
	}
}

// placeConfigs sets each category's Configs, once the server log is read.
func (d *digester) placeConfigs() {
	eras := parse.Eras(d.launches)
	for _, acc := range d.s.byName {
		p := &acc.prov
		acc.c.Configs = parse.ConfigCounts(parse.ConfigFacts{Runs: p.runLines, ByRun: p.byRun, Eras: eras, Times: p.times})
	}
}
