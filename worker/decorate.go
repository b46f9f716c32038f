package worker

import "net/http"

// decorate prepares a request the worker sends on its own (server info,
// /metrics) before it goes out.
func (c *Client) decorate(req *http.Request) {
	// the client sets its auth header here
}
