package snapshot

import "time"

// Baseline is the throughput against the night's own normal.
type Baseline struct {
	Server  *Trend  `json:"server,omitempty"`  // gen throughput, tok/s
	Classes []Trend `json:"classes,omitempty"` // records per minute of each class
}

// Trend is one series now against its trailing median.
type Trend struct {
	Class     string     `json:"class,omitempty"`
	Now       float64    `json:"now"`
	Median    float64    `json:"median"`
	Minutes   int        `json:"minutes"`              // of samples behind the median
	DropSince *time.Time `json:"drop_since,omitempty"` // under half the median since
	Cause     string     `json:"cause,omitempty"`      // the likely cause, once the drop is sustained
}
