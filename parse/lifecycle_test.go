package parse

import (
	"testing"
)

// Each 2026 way to die, stop or hang is its own kind and fault class; the
// bracketed SGLANG_LOGGING_CONFIG_PATH prefix, the renamed CUDA graph stage
// and the PD queue fields are read (testdata/logs/faults/README.md names
// every line's source).
func TestLifecycleLines2026(t *testing.T) {
	exit := func(c int) func(ServerEvent) bool {
		return func(e ServerEvent) bool { return e.ExitCode.OK && e.ExitCode.V == c }
	}
	checkEvents(t, feedLog(fixtureLines(t, "faults/lifecycle_2026.log")), []wantEv{
		{SChildDied, FaultCrash, func(e ServerEvent) bool { return e.Component == "scheduler_0" && exit(-3)(e) }},
		{SSigquit, FaultCrash, nil},
		{SCrashTail, FaultCrash, nil},
		{SCrashTail, FaultCrash, nil},
		{SChildDied, FaultFault, func(e ServerEvent) bool { return e.Component == "detokenizer" && exit(-15)(e) }},
		{SCrash, FaultCrash, func(e ServerEvent) bool { return e.Component == "Scheduler" && exit(-9)(e) }},
		{SStop, FaultStop, nil},
		{SStop, FaultStop, nil},
		{SStop, FaultStop, nil},
		{SHang, FaultHang, nil},
		{SHang, FaultHang, nil},
		{SHang, FaultHang, func(e ServerEvent) bool { return e.Dialect == DialectVLLM }},
		{SHang, FaultHang, nil},
		{SBatch, FaultNone, func(e ServerEvent) bool {
			return e.Prefix.Source == "scheduler.py:123" && e.Prefix.Level == "INFO" && e.Batch.RunningReqs.V == 5 &&
				e.Prefix.Time.Hour() == 10 && e.Dialect == DialectSGLang
		}},
		{SReady, FaultNone, func(e ServerEvent) bool { return e.Prefix.HasMS && e.Prefix.Time.Nanosecond() == 123e6 }},
		{SStartup, FaultNone, func(e ServerEvent) bool {
			return e.Startup.Stage == "cuda_graph_begin" && e.Startup.AvailMemGB == 73.10
		}},
		{SStartup, FaultNone, func(e ServerEvent) bool { return e.Startup.Stage == "cuda_graph_end" }},
		{SBatch, FaultNone, func(e ServerEvent) bool {
			b, _ := e.Batch.Num("#bootstrap-req")
			i, _ := e.Batch.Num("#inflight-req")
			return e.Batch.Phase == Prefill && b == 3 && i == 7
		}},
		{SBatch, FaultNone, func(e ServerEvent) bool {
			n, ok := e.Batch.Num("#transfer-req")
			return e.Batch.Phase == Decode && ok && n == 12
		}},
	})
}

// A message of its own that starts with a bracket is not taken for fields.
func TestBracketedMessageIsKept(t *testing.T) {
	ev := ParseServerLine("[2026-08-17 10:00:00] [gpu_id=0] Decode batch. #running-req: 1, #token: 5, token usage: 0.00, gen throughput (token/s): 1.00, #queue-req: 0")
	if ev.Kind != SBatch || ev.Batch.GPUID != 0 {
		t.Fatalf("%+v", ev)
	}
	ev = ParseServerLine("[2026-08-17 10:00:00][not a field] hello")
	if ev.Msg != "[not a field] hello" || ev.Prefix.Source != "" {
		t.Fatalf("%q %+v", ev.Msg, ev.Prefix)
	}
}
