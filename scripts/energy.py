#!/usr/bin/env python3
"""The GPUs' energy from power samples, computed apart from the Go code
(parse.PowerIntegrator) for its tests to check against.

stdin: one JSON object a line, {"t": seconds, "watts": W, "gpus": n,
"busy": bool} (or "ts": nvidia-smi's timestamp, "YYYY/MM/DD HH:MM:SS.mmm",
for "t"), or {"break": true} (a sample that could not be read).
argv[1]: the longest interval integrated, in seconds.
stdout: {"joules", "seconds", "idle_joules", "idle_seconds", "stretches"}.
An interval longer than the limit, going backwards, or between different
GPU counts is not integrated: the later sample starts a new stretch.
"""
import datetime
import json
import sys

max_gap = float(sys.argv[1])
out = {"joules": 0.0, "seconds": 0.0, "idle_joules": 0.0, "idle_seconds": 0.0, "stretches": 0}
last = None
for line in sys.stdin:
    s = json.loads(line)
    if s.get("break"):
        last = None
        continue
    if "ts" in s:
        t = datetime.datetime.strptime(s["ts"], "%Y/%m/%d %H:%M:%S.%f")
        s["t"] = t.replace(tzinfo=datetime.timezone.utc).timestamp()
    if last is None or not (0 < s["t"] - last["t"] <= max_gap) or s["gpus"] != last["gpus"]:
        out["stretches"] += 1
    else:
        dt = s["t"] - last["t"]
        j = (s["watts"] + last["watts"]) / 2 * dt
        out["joules"] += j
        out["seconds"] += dt
        if not s["busy"] and not last["busy"]:
            out["idle_joules"] += j
            out["idle_seconds"] += dt
    last = s
print(json.dumps(out))
