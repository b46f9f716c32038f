package remote

import (
	"fmt"
	"time"
)

// Phase is where the connection stands.
type Phase int

const (
	Connecting Phase = iota
	Connected
	Reconnecting
	Failed
	Closed
)

func (p Phase) String() string {
	return [...]string{"connecting", "connected", "reconnecting", "failed", "closed"}[p]
}

// ConnState is the connection as a value, published on every change.
type ConnState struct {
	Phase       Phase
	Since       time.Time     // when this phase began
	RTT         time.Duration // last keepalive round trip (Connected)
	LastContact time.Time     // last answer from the host, any phase
	Attempt     int           // reconnect attempts so far (Reconnecting)
	NextTry     time.Time     // when the next attempt starts (Reconnecting)
	Err         string        // why the link dropped or the last attempt failed
	Cause       error         // the last attempt's failure itself, when Err is its text (its kind: a *HostKeyError, an *AuthError…)
	Slept       bool          // a wall-clock gap showed that this machine slept
	Drops       int           // how many times a live link was lost: a watcher polling now and then misses none
	Sleeps      int           // how many sleeps this machine woke from; a wake is no drop, whatever it did to the link
	SleptFor    time.Duration // the last sleep's length
	WokeAt      time.Time     // the wall clock when the last wake was found
	Waking      bool          // finding a link after a wake: its failed tries are not yet news
	Sessions    int           // links set up so far: a new one starts with nothing kept
}

func (s ConnState) String() string {
	switch s.Phase {
	case Connected:
		return fmt.Sprintf("connected (rtt %s)", s.RTT.Round(100*time.Microsecond))
	case Reconnecting:
		return fmt.Sprintf("reconnecting (attempt %d): %s", s.Attempt, s.Err)
	case Failed:
		return "failed: " + s.Err
	}
	return s.Phase.String()
}

// Linked is a Host reached over a link whose state can be read, as a
// value and without a round trip (SSH). A Host without one (Local) needs
// no link: it is always there. Like Keeper, it is optional: callers
// type-assert it on a Host.
type Linked interface {
	State() ConnState
}

var _ Linked = (*SSH)(nil)

// WireStats are the bytes that crossed the first TCP hop since Dial.
type WireStats struct{ Sent, Received int64 }
