package snapshot

import (
	"fmt"
	"time"
)

// FiguresLabel says where a server's figures come from, as views print it:
// "metrics", "log", or "log, 12m old" when they are not live.
func FiguresLabel(v Server) string {
	if v.FiguresStale && v.FiguresAgeSeconds != nil {
		return v.Source + ", " + FormatDuration(time.Duration(*v.FiguresAgeSeconds*float64(time.Second))) + " old"
	}
	return v.Source
}

// IdleText is how views show a server whose last periodic line is stale
// while it answers: "idle · last batch 14:02: 930 tok/s" (the host's
// clock), never those figures as current. "" when it does not apply.
func IdleText(v Server) string {
	lb := v.LastBatch
	if lb == nil || v.State != ServerReady {
		return ""
	}
	when := FormatDuration(time.Duration(lb.AgeSeconds*float64(time.Second))) + " ago"
	if lb.At != nil {
		when = lb.At.Format("15:04")
	}
	return fmt.Sprintf("idle · last batch %s: %.0f tok/s", when, lb.GenThroughput)
}

// Server roles (Server.Role).
const (
	RoleServer  = "server"  // an SGLang (or vLLM) server
	RoleRouter  = "router"  // SGLang's router: one URL in front of replicas
	RoleReplica = "replica" // a server behind the router, found in its worker list
)
