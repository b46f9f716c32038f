#!/usr/bin/env python3
# ids.py compares record ids as python3's json.loads sees them: each line read
# with surrogateescape (raw invalid UTF-8 kept apart), numbers as exact
# decimals (7 == 7.0 == 70e-1, 1e21 == 10**21, "7" != 7), lone surrogate
# escapes kept as they are. The differential id tests of parse and worker
# run it (one harness for both). python3 stdlib only.
#
#   ids.py groups FILE  for each line, the index of the first line whose id
#                       is equal: the grouping resume must reproduce
#   ids.py check DIR    "prompts missing duplicated stray": DIR's distinct
#                       prompt ids, those with no record, those with more
#                       than one, and record ids no prompt has
import json
import sys
from collections import Counter
from decimal import Decimal


def canon(v):
    if isinstance(v, bool):
        return ("b", v)
    if v is None:
        return ("null",)
    if isinstance(v, Decimal):
        return ("n", v.normalize() if v != 0 else Decimal(0))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("l", tuple(canon(x) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, canon(x)) for k, x in v.items())))


def key(raw):
    o = json.loads(raw.decode("utf-8", "surrogateescape"), parse_float=Decimal, parse_int=Decimal)
    return canon(o["id"])


def groups(path):
    first = {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f.read().split(b"\n")[:-1]):
            print(first.setdefault(key(raw), n))


def check(d):
    def ids(path):
        with open(path, "rb") as f:
            return [key(raw) for raw in f if raw.strip()]
    p = set(ids(d + "/prompts.jsonl"))
    c = Counter(ids(d + "/raw_responses.jsonl"))
    print(len(p), sum(1 for x in p if c[x] == 0), sum(1 for x in c if c[x] > 1), sum(1 for x in c if x not in p))


if __name__ == "__main__":
    {"groups": groups, "check": check}[sys.argv[1]](sys.argv[2])
