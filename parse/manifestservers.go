package parse

import (
	"fmt"
	"net/url"
	"strconv"
)

// ServerEntry is one server of pipeline.toml's servers list, written as a
// URL ("http://127.0.0.1:30001") or a table
// ({url = "…", log = "logs/sglang_1.log", router = true, metrics = "http://127.0.0.1:29000"}).
type ServerEntry struct {
	URL     string `json:"url"`
	Log     string `json:"log,omitempty"`     // its log; relative to the root
	Router  bool   `json:"router,omitempty"`  // SGLang's router (sgl-router / model gateway)
	Metrics string `json:"metrics,omitempty"` // the router's Prometheus listener
}

// UnmarshalTOML takes either form.
func (e *ServerEntry) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		e.URL = x
	case map[string]any:
		for k, val := range x {
			var ok bool
			switch k {
			case "url":
				e.URL, ok = val.(string)
			case "log":
				e.Log, ok = val.(string)
			case "metrics":
				e.Metrics, ok = val.(string)
			case "router":
				e.Router, ok = val.(bool)
			default:
				return fmt.Errorf("servers: unknown key %q", k)
			}
			if !ok {
				return fmt.Errorf("servers: %s has the wrong type", k)
			}
		}
	default:
		return fmt.Errorf("servers: an entry is a URL or a table, not %T", v)
	}
	if u, err := url.Parse(e.URL); err != nil || u.Host == "" {
		return fmt.Errorf("servers: %q is no http URL", e.URL)
	}
	return nil
}

// ServerLogFor is the log a server of a list keeps when none is named: the
// first keeps the usual one, the others logs/sglang_inference.<port>.log.
func ServerLogFor(i int, serverURL string) string {
	if i == 0 {
		return ServerLogPath
	}
	u, err := url.Parse(serverURL)
	if err != nil || u.Port() == "" {
		return ServerLogPath[:len(ServerLogPath)-len(".log")] + "." + strconv.Itoa(i) + ".log"
	}
	return ServerLogPath[:len(ServerLogPath)-len(".log")] + "." + u.Port() + ".log"
}
