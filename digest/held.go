package digest

// heldSlot holds a category's records of one interval, and of one minute,
// read in a row, and adds them to the interval's maps and the minutes at
// once: a map's update or two a record were a fifth of the fold, and a
// night's records come in time order.
type heldSlot struct {
	on    bool
	slot  int
	k     Counts
	src   [8]int64 // by timeFieldCode
	min   int32
	minN  int64
	minOn bool
}

// add holds one record of interval slot and minute m since the window's
// start, whose time came from field.
func (h *heldSlot) add(d *digester, cat string, slot int, k Counts, field string, m int32, minutes *map[int32]int64) {
	code, ok := timeFieldCode(field)
	if !ok || code >= uint64(len(h.src)) { // not one of parse's names: as it is
		h.flush(d, cat, minutes)
		iv := d.interval(slot)
		iv.Sources[field]++
		addCounts(iv, cat, k)
		addMinute(minutes, m, 1)
		return
	}
	if h.on && slot != h.slot {
		h.flushSlot(d, cat)
	}
	h.on, h.slot = true, slot
	h.k.Records += k.Records
	h.k.Tokens += k.Tokens
	h.k.TokensUnknown += k.TokensUnknown
	h.src[code]++
	if h.minOn && m != h.min {
		addMinute(minutes, h.min, h.minN)
		h.minN = 0
	}
	h.min, h.minOn = m, true
	h.minN++
}

// flush adds what is held: at an interval's or a minute's change, and once
// the category's records are read.
func (h *heldSlot) flush(d *digester, cat string, minutes *map[int32]int64) {
	h.flushSlot(d, cat)
	if h.minOn {
		addMinute(minutes, h.min, h.minN)
		h.minOn, h.minN = false, 0
	}
}

func (h *heldSlot) flushSlot(d *digester, cat string) {
	if !h.on {
		return
	}
	iv := d.interval(h.slot)
	addCounts(iv, cat, h.k)
	for code, n := range h.src {
		if n > 0 {
			f, _ := timeFieldOf(uint64(code))
			iv.Sources[f] += n
		}
	}
	*h = heldSlot{min: h.min, minN: h.minN, minOn: h.minOn}
}

// interval is interval i, its maps made.
func (d *digester) interval(i int) *Interval {
	iv := &d.s.Intervals[i]
	if iv.Categories == nil {
		iv.Categories = map[string]Counts{}
		iv.Sources = map[string]int64{}
	}
	return iv
}

func addCounts(iv *Interval, cat string, k Counts) {
	x := iv.Categories[cat]
	x.Records += k.Records
	x.Tokens += k.Tokens
	x.TokensUnknown += k.TokensUnknown
	iv.Categories[cat] = x
}

func addMinute(minutes *map[int32]int64, m int32, n int64) {
	if *minutes == nil {
		*minutes = map[int32]int64{}
	}
	(*minutes)[m] += n
}
