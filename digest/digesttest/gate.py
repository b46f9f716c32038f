# The training-readiness gate, counted by Python's json module: an
# independent reading of docs/CONFIG.md's [gate] rules, against which the
# Go figures (status, the report, the agent) are checked.
#   gate.py write FILE N SEED [START]   append N records in the old script's
#     shape, a second apart from START (a Unix time; default an hour ago)
#   gate.py count ROOT MAX_LENGTH THINKING   print {category: counts}
import glob, json, os, random, re, sys, time

def write(path, n, seed, start=None):
    rng = random.Random(seed)
    t = time.time() - 3600 if start is None else start
    with open(path, "a") as f:
        for i in range(n):
            rec = {"id": "py-%d-%d" % (seed, i), "timestamp": t + i, "prompt": "q%d" % i}
            r = rng.random()
            content, reasoning, finish, comp = "an answer %d" % i, "I reason about %d" % i, "stop", rng.randint(50, 3000)
            if r < 0.06:      # a reasoner cut in its thinking: null content
                content, finish, comp = None, "length", 4096
            elif r < 0.12:    # the capture bug: no reasoning
                reasoning = None
            elif r < 0.16:    # the template's think left in the answer
                content = "<think>plan</think>\n" + content
            elif r < 0.17:    # blanks
                content = " \n\n "
            elif r < 0.19:    # Unicode's blanks (json.dumps writes them \u00a0)
                content = "\u00a0\u3000 "
            elif r < 0.25:    # long: over max_length
                comp = 7000
            rec.update({"content": content, "reasoning_content": reasoning, "finish_reason": finish,
                        "usage": {"prompt_tokens": 500, "completion_tokens": comp}})
            f.write(json.dumps(rec) + "\n")

def blank(s):
    return s.strip() == ""  # str.isspace's blanks: U+00A0, U+3000, … too

def empty(v):  # NaN: json.dumps of pandas' missing value
    return v is None or v != v or (isinstance(v, str) and blank(v))

MARK = re.compile(r"</?think>")

def generate(v):
    if not isinstance(v, str):
        return {"empty": v is None, "reasoned": False, "stray": False}
    ms = [(m.start(), m.end(), m.group(0) == "</think>") for m in MARK.finditer(v)]
    if not ms:
        return {"empty": blank(v), "reasoned": False, "stray": False}
    a, e, close = ms[0]
    if close:
        return {"reasoned": not blank(v[:a]), "empty": blank(v[e:]), "stray": len(ms) > 1}
    if not blank(v[:a]):  # text before <think>: an answer that mentions the tag
        return {"empty": False, "reasoned": False, "stray": True}
    if len(ms) < 2 or not ms[1][2]:
        return {"reasoned": not blank(v[e:]), "empty": True, "stray": True}
    return {"reasoned": not blank(v[e:ms[1][0]]), "empty": blank(v[ms[1][1]:]),
            "stray": len(ms) > 2}

def count_of(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, (int, float)) and v >= 0 and float(v).is_integer():
        return int(v)
    return None

def tokens(r, key):
    n = count_of(r.get(key))
    for sub in ("usage", "meta_info"):
        if n is None and isinstance(r.get(sub), dict):
            n = count_of(r[sub].get(key))
    return n

def facts(r):
    reasoning = r.get("reasoning_content")
    has_reasoning = "reasoning_content" in r
    text = None
    for k in r:
        if k in ("text", "response", "output"):
            text = k
    if "content" in r:
        c = r["content"]
        g = {"empty": empty(c), "reasoned": False,
             "stray": isinstance(c, str) and MARK.search(c) is not None}
    elif text is not None:
        g = generate(r[text])
    else:  # no answer field: empty (a reasoner cut in its thinking, or none at all)
        g = {"empty": True, "reasoned": False, "stray": False}
    g["reasoned"] = g["reasoned"] or (has_reasoning and not empty(reasoning))
    return g

def count(root, max_length, thinking):
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "prepared", "*", "raw_responses.jsonl"))):
        c = {"records": 0, "empty": 0, "no_reasoning": 0, "stray": 0, "over": 0, "pass_plain": 0, "pass_thinking": 0}
        with open(path) as f:
            data = f.read()
        for line in data.split("\n")[:-1]:  # whole lines only
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not isinstance(r, dict) or r.get("id") is None:
                continue
            g = facts(r)
            ct, pt = tokens(r, "completion_tokens"), tokens(r, "prompt_tokens")
            over = max_length > 0 and ct is not None and ct + (pt or 0) > max_length
            c["records"] += 1
            c["empty"] += g["empty"]
            c["no_reasoning"] += not g["reasoned"]
            c["stray"] += g["stray"]
            c["over"] += over
            plain = not g["empty"] and not over
            c["pass_plain"] += plain
            c["pass_thinking"] += plain and g["reasoned"] and not g["stray"]
        thinks = {"true": True, "false": False}.get(thinking, c["records"] - c["no_reasoning"] > 0 or 2 * c["stray"] > c["records"])
        c["thinking"] = thinks
        c["pass"] = c["pass_thinking"] if thinks else c["pass_plain"]
        out[os.path.basename(os.path.dirname(path))] = c
    return out

if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else None)
    else:
        json.dump(count(sys.argv[2], int(sys.argv[3]), sys.argv[4]), sys.stdout)
