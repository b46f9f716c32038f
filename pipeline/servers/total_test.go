package servers

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func TestHostTotal(t *testing.T) {
	t.Parallel()
	h := 0.5
	each := []snapshot.Server{
		{Name: "a", State: snapshot.ServerBusy, GenThroughput: 100, RunningReqs: 3, TokenUsage: 0.4, CacheHitRate: &h, Source: "metrics"},
		{Name: "b", State: snapshot.ServerDown},
		{Name: "r", Role: snapshot.RoleRouter, State: snapshot.ServerReady, RunningReqs: 3},
	}
	tot := hostTotal(each)
	if tot.State != snapshot.ServerUnhealthy || tot.RunningReqs != 3 || tot.GenThroughput != 100 || !strings.Contains(tot.Reason, "1 of 2 not answering: b down") {
		t.Fatalf("%+v", tot)
	}
	each[1].State = snapshot.ServerReady
	if tot = hostTotal(each); tot.State != snapshot.ServerBusy || tot.Reason != "" {
		t.Fatalf("%+v", tot)
	}
}
