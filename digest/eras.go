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
	// the records of one run, and of one minute, read in a row, added at
	// once (flush): a map's update a record was a quarter of the fold;
	// runs keep their slots in the order they came
	run        string
	runT       parse.Tally
	runSeen    bool
	minute     int64
	minuteT    parse.Tally
	minuteSeen bool
}

// noteRecord counts one record by run, and a run-less one by its time.
func (p *provAcc) noteRecord(st parse.RecordStamp) {
	one := parse.OneRecord(st.CompletionTokens, st.HasTokens)
	if !p.runSeen || st.Run != p.run {
		p.flushRun()
		p.run, p.runSeen = st.Run, true
	}
	p.runT.Add(one)
	if st.Run != "" {
		return
	}
	if !st.HasFinished {
		p.times.Add(st.Finished, false, one)
		return
	}
	if m := parse.MinuteOf(st.Finished); !p.minuteSeen || m != p.minute {
		p.flushMinute()
		p.minute, p.minuteSeen = m, true
	}
	p.minuteT.Add(one)
}

func (p *provAcc) flushRun() {
	if p.runSeen {
		p.byRun.Add(p.run, p.runT)
		p.runT, p.runSeen = parse.Tally{}, false
	}
}

func (p *provAcc) flushMinute() {
	if p.minuteSeen {
		p.times.AddMinute(p.minute, p.minuteT)
		p.minuteT, p.minuteSeen = parse.Tally{}, false
	}
}

// flush adds what noteRecord holds: once a category's records are read.
func (p *provAcc) flush() {
	p.flushRun()
	p.flushMinute()
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
