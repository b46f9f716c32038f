#!/usr/bin/env python3
# check_corpus.py ROOT [CORPUS] checks a pipeline root that started as a copy
# of the corpus (scripts/make_corpus.py, default CORPUS testdata/corpus) after
# the worker ran on it: every prompt id has exactly one valid record, none is
# missing, no id is written twice, no record says finish_reason "abort", every
# line the worker added is a whole JSON record of its category. Ids are
# compared as JSON values with json.loads semantics: strings after unescaping,
# numbers by exact value (7 == 7.0 == 7e0, "7" != 7). Old lines that are not
# JSON (torn, glued, NUL-damaged) may stay; their ids need a valid record.
# Stale old records (no prompt has their id) may stay and count for nothing.
# It also checks that its reading of the untouched corpus matches the
# generator's <CAT>/expect.json. Prints one JSON object per category with
# --json; exit 0 when all holds, 1 when the worker broke the contract, 2 on
# a harness problem. python3 stdlib only.
import json
import os
import sys
from decimal import Decimal

BOM = b"\xef\xbb\xbf"
WS = b" \t\r\n"


def reject_constant(name):
    raise ValueError("not JSON: " + name)


def decode(line):
    """The JSON value of a line, or raise ValueError."""
    text = line.decode("utf-8")  # strict: invalid UTF-8 is not JSON
    return json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=reject_constant)


def canon(v):
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, Decimal):
        return ("n", v)  # Decimal equality and hash are exact: 7 == 7.0
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, canon(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("a", tuple(canon(x) for x in v))
    raise ValueError("null id")


def required(key):
    return key[0] in ("s", "n")


def lines_of(data):
    """Lines of a file (split on \\n only: U+2028 is no line end), a BOM at the
    start removed; the last element is the torn tail (b"" if none)."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


def record(line):
    """(canonical id, record) of a line that is a whole JSON record, else None."""
    s = line.strip(WS)
    if not s:
        return None
    try:
        v = decode(s)
    except ValueError:
        return None
    if not isinstance(v, dict) or v.get("id") is None:
        return None
    return canon(v["id"]), v


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def check(cat, root_dir, corpus_dir):
    s = {"category": cat}
    prompts, tail = lines_of(read(os.path.join(root_dir, "prompts.jsonl")))
    if tail.strip(WS):
        prompts.append(tail)
    ids, opt = set(), set()
    s["prompt_lines"] = bad = dup_lines = 0
    for line in prompts:
        if not line.strip(WS):
            continue
        s["prompt_lines"] += 1
        r = record(line)
        if r is None:
            bad += 1
            continue
        k = r[0]
        if k in ids or k in opt:
            dup_lines += 1
        (ids if required(k) else opt).add(k)
    s.update(required_ids=len(ids), optional_ids=len(opt), bad_prompts=bad, duplicate_prompt_lines=dup_lines)

    old_lines, old_tail = lines_of(read(os.path.join(corpus_dir, "raw_responses.jsonl")))
    old = {}
    for line in old_lines + ([old_tail] if old_tail else []):
        old[line] = old.get(line, 0) + 1
    ov = oi = ostale = 0
    odone = set()
    for line in old_lines:
        r = record(line)
        if r is None:
            oi += 1
        else:
            ov += 1
            if r[0] in ids or r[0] in opt:
                odone.add(r[0])
            else:
                ostale += 1
    s.update(old_valid_records=ov, old_invalid_lines=oi + (1 if old_tail else 0),
             old_done_required=len(odone & ids), old_stale_records=ostale)

    data = read(os.path.join(root_dir, "raw_responses.jsonl"))
    lines, tail = lines_of(data)
    s["torn_tail"] = bool(tail)
    counts = {}
    new = new_invalid = stray = aborts = wrong_cat = 0
    examples = []
    for line in lines:
        if old.get(line, 0) > 0:
            old[line] -= 1
            is_new = False
        else:
            is_new = True
            new += 1
        r = record(line)
        if r is None:
            if is_new:
                new_invalid += 1
                examples.append("new line is not a whole JSON record: %r" % line[:80])
            continue
        k, v = r
        counts[k] = counts.get(k, 0) + 1
        if v.get("finish_reason") == "abort":
            aborts += 1
            examples.append("record with finish_reason abort: %r" % line[:80])
        if is_new:
            if k not in ids and k not in opt:
                stray += 1
                examples.append("new record for an id no prompt has: %r" % (k,))
            if v.get("category") != cat:
                wrong_cat += 1
    missing = [k for k in ids if counts.get(k, 0) == 0]
    dups = [k for k in ids | opt if counts.get(k, 0) > 1]
    s.update(new_lines=new, new_invalid_lines=new_invalid, missing=len(missing), duplicate_ids=len(dups),
             extra_records=sum(counts[k] - 1 for k in dups), stray_new_records=stray, aborts=aborts,
             wrong_category=wrong_cat,
             optional_done=sum(1 for k in opt if counts.get(k, 0) == 1))
    for k in sorted(missing, key=repr)[:3]:
        examples.append("missing %r" % (k,))
    for k in sorted(dups, key=repr)[:3]:
        examples.append("%r has %d records" % (k, counts[k]))
    s["examples"] = examples[:8]
    s["ok"] = not (missing or dups or new_invalid or stray or aborts or wrong_cat or tail)
    return s


EXPECT_KEYS = ("prompt_lines", "required_ids", "optional_ids", "bad_prompts", "duplicate_prompt_lines",
               "old_valid_records", "old_done_required", "old_stale_records", "old_invalid_lines")


def main(argv):
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    if not args:
        print("usage: check_corpus.py [--json] ROOT [CORPUS]", file=sys.stderr)
        return 2
    root = args[0]
    corpus = args[1] if len(args) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "corpus")
    cats = sorted(d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "prompts.jsonl")))
    if not cats:
        print("no categories in %s" % corpus, file=sys.stderr)
        return 2
    harness = worker = False
    for cat in cats:
        s = check(cat, os.path.join(root, "prepared", cat), os.path.join(corpus, cat))
        with open(os.path.join(corpus, cat, "expect.json")) as f:
            exp = json.load(f)
        for k in EXPECT_KEYS:
            if s[k] != exp[k]:
                harness = True
                print("HARNESS: %s: %s is %s, the generator meant %s" % (cat, k, s[k], exp[k]), file=sys.stderr)
        worker = worker or not s["ok"]
        if as_json:
            print(json.dumps(s, default=str, sort_keys=True))
        else:
            print("%-11s %s missing=%d duplicate_ids=%d extra=%d new_invalid=%d stray=%d aborts=%d" % (
                cat, "ok  " if s["ok"] else "FAIL", s["missing"], s["duplicate_ids"], s["extra_records"],
                s["new_invalid_lines"], s["stray_new_records"], s["aborts"]))
            for e in s["examples"]:
                print("    " + e)
    return 2 if harness else (1 if worker else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
