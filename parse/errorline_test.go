package parse

import "testing"

// IsErrorLine is the one error-line rule. It keeps everything the three
// rules it replaces caught: the worker parser's (tracebacks, panics, Error,
// Exception, FATAL), the server parser's (NCCL, SGLang's request timeouts)
// and the log pane's jump to the next error (hit an exception, out of
// memory, failed).
func TestIsErrorLine(t *testing.T) {
	for _, l := range []string{
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 2143, in run`,
		"panic: runtime error: index out of range [3] with length 3",
		"goroutine 1 [running]:",
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"ERROR: B1: open prompts.jsonl: permission denied",
		"error: unexpected EOF",
		"FATAL: cannot allocate",
		"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970",
		"Request waiting timeout reached. rid=abc",
		"Request running timeout reached. rid=abc",
		"Scheduler hit an exception: Traceback (most recent call last):",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
		"B1: id 7 failed: status 500: internal",
		"CRITICAL the engine core died",
		"asyncio.exceptions.CancelledError",
		"ValueError: Exception in ASGI application",
	} {
		if !IsErrorLine(l) {
			t.Errorf("not an error line: %q", l)
		}
	}
	for _, l := range []string{
		"",
		"50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
		"Processing: B1_glaive (SHORT)",
		"B1_glaive: 10000 prompts, 1652 resumed, 8348 to go",
		"Decode batch. #running-req: 150, #token: 412345, token usage: 0.42, gen throughput (token/s): 2100.55, #queue-req: 0",
		"The server is fired up and ready to roll!",
		"WARNING: B1: 2 prompt lines repeat the id of an earlier line and are skipped",
	} {
		if IsErrorLine(l) {
			t.Errorf("an error line: %q", l)
		}
	}
}

// The worker parser and the server parser both use it: a worker line it
// calls an error is WError, and a server message it calls an error (that
// no more specific rule claims) is SError.
func TestOneErrorRuleForBothLogs(t *testing.T) {
	for _, l := range []string{"B1: id 7 failed: status 500", "RuntimeError: NCCL error", "CUDA out of memory"} {
		if k := ParseWorkerLine(l).Kind; k != WError {
			t.Errorf("worker %q: %v", l, k)
		}
	}
	for _, m := range []string{"Request waiting timeout reached. rid=1", "RuntimeError: oops", "load failed for adapter x"} {
		line := "[2026-02-03 10:00:00] " + m
		if k := ParseServerLine(line).Kind; k != SError {
			t.Errorf("server %q: %v", line, k)
		}
	}
}
