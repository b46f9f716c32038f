#!/usr/bin/env python3
"""A root's wasted-token ledgers and energies, summed with Python's json
module apart from the Go code, for the tests to check every view against.

argv[1]: the root. stdout: {category: {...}} with each run's last tally
line of prepared/CAT/runs.jsonl summed, and "records_tokens" and
"records_truncated": the completion tokens of raw_responses.jsonl's
records, all and those with finish_reason "length".
"""
import glob
import json
import os
import sys

root = sys.argv[1]
out = {}
for d in sorted(glob.glob(os.path.join(root, "prepared", "*"))):
    cat = os.path.basename(d)
    last = {}
    try:
        with open(os.path.join(d, "runs.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if r.get("tally") is not None and not r.get("end"):
                    last[r["run"]] = r["tally"]
    except FileNotFoundError:
        continue
    s = {"runs": len(last), "kept": 0, "truncated": 0, "retried": 0, "aborted": 0, "generated": None,
         "counted": 0, "joules": 0.0, "seconds": 0.0, "gpu_seconds": 0.0, "records": 0, "stretches": 0, "energy_runs": 0}
    for t in last.values():
        l = t["ledger"]
        for k in ("kept", "truncated", "retried", "aborted", "counted"):
            s[k] += l.get(k, 0)
        if l.get("generated") is not None:
            s["generated"] = (s["generated"] or 0) + l["generated"]
        e = t.get("energy")
        if e is not None:
            s["energy_runs"] += 1
            for k in ("joules", "seconds", "gpu_seconds", "records", "stretches"):
                s[k] += e[k]
    kept = trunc = 0
    with open(os.path.join(d, "raw_responses.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            n = r.get("completion_tokens") or (r.get("usage") or {}).get("completion_tokens") or 0
            kept += n
            if r.get("finish_reason") == "length":
                trunc += n
    s["records_tokens"], s["records_truncated"] = kept, trunc
    out[cat] = s
print(json.dumps(out))
