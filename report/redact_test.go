package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/report"
)

// A server URL with a password (a gateway's basic auth) in every string
// of the summary the HTML page draws: a run's settings and end, an
// incident, a note, a category's error. The page shows "admin:***@",
// never the password; so does the text report.
func TestReportHTMLRedactsURLPassword(t *testing.T) {
	const secret = "hunter2pass"
	url := "http://admin:" + secret + "@10.0.0.1:8080"
	s := night(t)
	if len(s.Runs) == 0 {
		t.Fatal("the night has no run")
	}
	r := &s.Runs[0]
	if s.Configs[r.Config] == nil {
		s.Configs[r.Config] = map[string]string{}
	}
	s.Configs[r.Config]["server"] = url
	r.EndHow = "the server " + url + " refused every request"
	s.Incidents = append(s.Incidents, digest.Incident{Time: s.Now.Add(-time.Hour), Kind: "crash", Text: "connection to " + url + "/v1 lost"})
	s.Notes = append(s.Notes, "probed "+url+"/health")
	s.Categories[1].Error = "Post \"" + url + "/v1/chat/completions\": EOF"
	var h, txt bytes.Buffer
	if err := report.HTML(&h, s, "gpu1:/root"); err != nil {
		t.Fatal(err)
	}
	if err := report.Text(&txt, s, "gpu1:/root", -1); err != nil {
		t.Fatal(err)
	}
	for what, page := range map[string]string{"HTML": h.String(), "text": txt.String()} {
		if strings.Contains(page, secret) {
			t.Errorf("the %s report shows the password", what)
		}
		if n := strings.Count(page, "admin:***@10.0.0.1:8080"); n < 4 {
			t.Errorf("the %s report shows the redacted URL %d times, want the settings, the run's end, the incident, the note and the category's error", what, n)
		}
	}
}
