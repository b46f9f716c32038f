package digest

import "github.com/synthwatch/synthwatch/parse"

// tally keeps a run's tally line on cat (its last wins, parse.Tallies).
func (d *digester) tally(cat string, rl parse.RunLine) {
	if d.tallies == nil {
		d.tallies = map[string]*parse.Tallies{}
	}
	t := d.tallies[cat]
	if t == nil {
		t = &parse.Tallies{}
		d.tallies[cat] = t
	}
	t.Note(rl.Run, *rl.Tally)
}

// spends sets each category's Spend and the night's, as status does.
func (d *digester) spends() {
	var all []*parse.Spend
	for i := range d.s.Categories {
		c := &d.s.Categories[i]
		if t := d.tallies[c.Name]; t != nil {
			c.Spend = parse.SpendOf(t, d.cost)
			all = append(all, c.Spend)
		}
	}
	d.s.Spend = parse.NightSpend(all, d.cost)
}
