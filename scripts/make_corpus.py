#!/usr/bin/env python3
# make_corpus.py writes testdata/corpus/: one folder per category with a
# prompts.jsonl and, for most, the raw_responses.jsonl an earlier (Python)
# run left behind, in the shapes real datasets and old scripts produce (JSON
# escapes, key order, numeric ids, CRLF, a BOM, torn and NUL-damaged lines,
# stale records). It also writes <CAT>/expect.json: what the corpus holds, as
# the generator meant it, so a test can check that its own reading agrees.
# The output is deterministic (seeded). Regenerate with:
#     python3 scripts/make_corpus.py
# (stdlib only; run from anywhere). worker/corpus_test.go uses the corpus.
import json
import os
import random
import shutil

SEED = 20261128
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "testdata", "corpus")
BOM = "\ufeff".encode("utf-8")


def jstr(s, style):
    """A JSON string literal for s, escaped in one of several valid styles."""
    if style == "py":  # json.dumps default: ensure_ascii, lowercase hex
        return json.dumps(s)
    if style == "pyutf8":
        return json.dumps(s, ensure_ascii=False)
    out = ['"']
    for ch in s:
        o = ord(ch)
        if style == "all":  # every character as \uXXXX, ASCII letters too
            if o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
            else:
                out.append("\\u%04x" % o)
            continue
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20:
            out.append("\\u%04x" % o)
        elif style == "go" and ch in "<>&":  # Go's json.Marshal (HTML-safe)
            out.append("\\u%04x" % o)
        elif style == "go" and o in (0x2028, 0x2029):
            out.append("\\u%04x" % o)
        elif style == "upper" and ch == "/":  # the optional \/ escape
            out.append("\\/")
        elif style == "upper" and o > 0x7E:  # non-ASCII as \uXXXX, uppercase hex
            if o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04X\\u%04X" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
            else:
                out.append("\\u%04X" % o)
        else:  # "min": raw UTF-8, U+2028 raw too
            out.append(ch)
    out.append('"')
    return "".join(out)


class Cat:
    def __init__(self, name):
        self.name = name
        self.prompts = []  # lines (str), without line ends
        self.raw = []  # lines (str or bytes), without line ends
        self.raw_tail = None  # a torn last line (no newline)
        self.eol = "\n"
        self.bom = False
        self.prompt_ids = set()  # canonical keys of ids that must be done
        self.optional_ids = set()  # ids a worker may reject (object, array, bool)
        self.bad_prompts = 0  # prompt lines without a usable id
        self.old_valid = 0  # old raw lines that are whole records with an id
        self.old_done = set()  # prompt ids with a valid old record
        self.old_stale = 0  # valid old records whose id no prompt has
        self.old_invalid = 0  # old raw lines that are not whole JSON records
        self.prompt_lines_extra = 0  # duplicate prompt lines (same id by value)

    def prompt(self, key, line, optional=False):
        if key in self.prompt_ids or key in self.optional_ids:
            self.prompt_lines_extra += 1
        elif optional:
            self.optional_ids.add(key)
        else:
            self.prompt_ids.add(key)
        self.prompts.append(line)

    def done(self, key, line):
        """An old raw record for the id with canonical key (valid JSON)."""
        self.raw.append(line)
        self.old_valid += 1
        if key in self.prompt_ids or key in self.optional_ids:
            self.old_done.add(key)
        else:
            self.old_stale += 1

    def write(self):
        d = os.path.join(OUT, self.name)
        os.makedirs(d)
        eol = self.eol.encode()

        def enc(x):
            return x if isinstance(x, bytes) else x.encode("utf-8")

        data = (BOM if self.bom else b"") + b"".join(enc(l) + eol for l in self.prompts)
        with open(os.path.join(d, "prompts.jsonl"), "wb") as f:
            f.write(data)
        if self.raw or self.raw_tail is not None:
            data = (BOM if self.bom else b"") + b"".join(enc(l) + eol for l in self.raw)
            if self.raw_tail is not None:
                data += enc(self.raw_tail)
            with open(os.path.join(d, "raw_responses.jsonl"), "wb") as f:
                f.write(data)
        expect = {
            "category": self.name,
            "prompt_lines": len([l for l in self.prompts if l.strip()]),  # blank lines are not prompts
            "required_ids": len(self.prompt_ids),
            "optional_ids": len(self.optional_ids),
            "bad_prompts": self.bad_prompts,
            "duplicate_prompt_lines": self.prompt_lines_extra,
            "old_valid_records": self.old_valid,
            "old_done_ids": len(self.old_done),
            "old_done_required": len(self.old_done & self.prompt_ids),
            "old_stale_records": self.old_stale,
            "old_invalid_lines": self.old_invalid + (1 if self.raw_tail is not None else 0),
        }
        with open(os.path.join(d, "expect.json"), "w") as f:
            json.dump(expect, f, indent=1, sort_keys=True)
            f.write("\n")


def messages(cat, i):
    return [{"role": "user", "content": "%s question %d: say something short" % (cat, i)}]


def old_record(rng, cat, id_value, **over):
    """The fields the old Python script wrote, id first."""
    r = {
        "id": id_value,
        "category": cat,
        "run": "py-legacy",
        "prompt_tokens": rng.randint(12, 40),
        "completion_tokens": rng.randint(80, 300),
        "finish_reason": "stop",
        "latency_s": round(rng.uniform(0.5, 9.0), 3),
        "finished_at": "2025-11-%02dT%02d:%02d:00Z" % (rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)),
        "content": "an earlier answer " + "x" * rng.randint(10, 60),
    }
    r.update(over)
    return r


def skey(s):
    return "s:" + s


def nkey(literal):
    """Canonical key of a JSON number literal: its exact rational value."""
    from fractions import Fraction
    from decimal import Decimal

    return "n:" + str(Fraction(Decimal(literal)))


def py_default(rng):
    c = Cat("py_default")
    stems = ["café", "naïve", "日本語", "Ωmega", "😀smile", "plain", "Zürich", "crème brûlée"]
    for i in range(120):
        s = "%s-%d" % (stems[i % len(stems)], i)
        c.prompt(skey(s), json.dumps({"id": s, "messages": messages(c.name, i)}))
        if rng.random() < 0.5:
            rec = old_record(rng, c.name, s)
            if rng.random() < 0.4:
                c.done(skey(s), json.dumps(rec))  # default: ", " ": " and \u00e9
            else:
                c.done(skey(s), json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
    return c


def py_utf8(rng):
    c = Cat("py_utf8")
    stems = ["été", "niño", "Straße", "中文", "🚀launch", "ascii"]
    for i in range(120):
        s = "%s-%d" % (stems[i % len(stems)], i)
        c.prompt(skey(s), json.dumps({"id": s, "messages": messages(c.name, i)}, ensure_ascii=False))
        if rng.random() < 0.5:
            rec = old_record(rng, c.name, s)
            if rng.random() < 0.5:
                c.done(skey(s), json.dumps(rec))
            else:
                c.done(skey(s), json.dumps(rec, separators=(",", ":")))  # compact, still \u escapes
    return c


def key_order(rng):
    c = Cat("key_order")
    for i in range(120):
        s = "k-%d" % i
        m = messages(c.name, i)
        shape = i % 6
        if shape == 0:
            p = {"messages": m, "id": s}
        elif shape == 1:
            p = {"Id": "alias-%d" % i, "id": s, "messages": m}
        elif shape == 2:
            p = {"id": s, "ID": "alias-%d" % i, "messages": m}
        elif shape == 3:
            p = {"meta": {"id": "nested-%d" % i, "source": "web"}, "id": s, "messages": m}
        elif shape == 4:
            p = {"source": "forum", "completion_tokens": "n/a", "id": s, "messages": m}
        else:
            p = {"ids": [i, i + 1], "id_": "x", "messages": m, "iD": i, "id": s}
        sep = (",", ":") if i % 2 else (", ", ": ")
        c.prompt(skey(s), json.dumps(p, separators=sep))
        if rng.random() < 0.45:
            rec = old_record(rng, c.name, s)
            form = rng.randrange(7)
            if form == 0:  # id not first, tokens a float
                del rec["id"]
                rec["completion_tokens"] = 100.0
                rec["id"] = s
            elif form == 1:  # tokens as a string
                rec["completion_tokens"] = "100"
            elif form == 2:  # tokens nested, as OpenAI's usage
                del rec["completion_tokens"], rec["prompt_tokens"]
                rec = {"usage": {"prompt_tokens": 20, "completion_tokens": 100}, **rec}
            elif form == 3:  # an Id alias after id
                rec["Id"] = "alias-%d" % i
            elif form == 4:  # an ID alias before id
                rec = {"ID": "alias-%d" % i, **rec}
            elif form == 5:  # tokens null, then 1e2
                rec["completion_tokens"] = None if i % 2 else 1e2
            else:  # id last
                rec = {k: v for k, v in rec.items() if k != "id"}
                rec["id"] = s
            c.done(skey(s), json.dumps(rec, separators=(",", ":") if rng.random() < 0.5 else (", ", ": ")))
    # lines without an id (only aliases): bad prompts, never done
    for i in range(3):
        c.prompts.append(json.dumps({"ID": "k-noid-%d" % i, "messages": messages(c.name, 1000 + i)}))
        c.bad_prompts += 1
    c.prompts.append(json.dumps({"Id": "k-noid-3", "messages": messages(c.name, 1003)}))
    c.bad_prompts += 1
    return c


def numbers(rng):
    c = Cat("numbers")
    m = lambda i: json.dumps(messages(c.name, i), separators=(",", ":"))
    lits = [str(i) for i in range(1, 81)]
    lits += ["10000000000000000000000000", "12345678901234567890", "12345678901234567891",
             "-3", "1.5", "2.25", "0"]
    strs = ["7", "8", "42", "1e25", "0"]  # strings beside the numbers: different ids
    k = 0
    for lit in lits:
        c.prompt(nkey(lit), '{"id":%s,"messages":%s}' % (lit, m(k)))
        k += 1
    for s in strs:
        c.prompt(skey(s), '{"id":%s,"messages":%s}' % (json.dumps(s), m(k)))
        k += 1
    # old records: the same numbers written differently (equal as numbers)
    other = {"7": "7.0", "10000000000000000000000000": "1e+25", "12": "1.2e1", "30": "30.000",
             "1.5": "1.50", "2.25": "225e-2", "-3": "-3.0", "20": "20", "0": "0.0",
             "12345678901234567890": "12345678901234567890"}

    def rec_line(id_lit):
        rec = old_record(rng, c.name, 0)
        body = json.dumps(rec, separators=(",", ":"))
        return '{"id":%s,%s' % (id_lit, body[len('{"id":0,'):])

    for lit, old in other.items():
        c.done(nkey(lit), rec_line(old))
    for s in ["8", "42"]:  # the strings, not the numbers 8 and 42
        c.done(skey(s), rec_line(json.dumps(s)))
    for lit in lits[:80]:
        if lit not in other and rng.random() < 0.35:
            c.done(nkey(lit), rec_line(lit))
    return c


def crlf_bom(rng):
    c = Cat("crlf_bom")
    c.eol, c.bom = "\r\n", True
    for i in range(100):
        s = "cb-%d" % i
        c.prompt(skey(s), json.dumps({"id": s, "messages": messages(c.name, i)}, separators=(",", ":")))
        if i == 4:
            c.prompts.append("")  # a blank line
    # the first old record (behind the BOM) is for cb-1, not cb-0: the BOM
    # line of each file must be read for its own id
    ids = [1] + sorted(rng.sample(range(2, 100), 39))
    for i in ids:
        c.done(skey("cb-%d" % i), json.dumps(old_record(rng, c.name, "cb-%d" % i), separators=(",", ":")))
    return c


def damaged(rng):
    c = Cat("damaged")
    for i in range(100):
        s = "d-%d" % i
        c.prompt(skey(s), json.dumps({"id": s, "messages": messages(c.name, i)}, separators=(",", ":")))

    def line(i):
        return json.dumps(old_record(rng, c.name, "d-%d" % i), separators=(",", ":"))

    for i in range(60):
        if i == 11 or i == 21:
            continue  # consumed by the damage below
        if i == 10:  # a torn record (the crash) with the next run's record glued on
            torn = line(10)
            c.raw.append(torn[: len(torn) // 2] + line(11))
            c.old_invalid += 1
            continue
        if i == 20:  # NULs from the middle of d-20 into the start of d-21 (one line)
            a, b = line(20), line(21)
            joined = a + "\n" + b
            start, end = len(a) // 2, len(a) + 1 + len(b) // 3
            c.raw.append(joined[:start] + "\0" * (end - start) + joined[end:])
            c.old_invalid += 1
            continue
        if i == 30:  # a block of NULs on its own line (a file extended by a crash)
            c.raw.append("\0" * 512)
            c.old_invalid += 1
        if i == 40:  # a record cut off and then the line ends
            t = line(40)
            c.raw.append(t[: len(t) - 25])
            c.old_invalid += 1
            continue
        c.done(skey("d-%d" % i), line(i))
    t = line(60)  # the torn last line (no newline): d-60 is not done
    c.raw_tail = t[: len(t) // 3]
    return c


def stale(rng):
    c = Cat("stale")
    for i in range(100):
        s = "s-%d" % i
        c.prompt(skey(s), json.dumps({"id": s, "messages": messages(c.name, i)}, separators=(",", ":")))
    # the old raw file is from an earlier version of the dataset: 120 records
    # whose ids no prompt has any more, and 20 that are still real
    recs = [("old-%d" % i) for i in range(120)] + [("s-%d" % i) for i in range(0, 100, 5)]
    rng.shuffle(recs)
    for s in recs:
        c.done(skey(s), json.dumps(old_record(rng, c.name, s), separators=(",", ":")))
    return c


def escapes(rng):
    c = Cat("escapes")
    stems = ['a/b', 'q"x"', 'amp&', '<tag>', 'ls\u2028', 'ps\u2029', 'tab\t', 'bs\\', 'é', '😀', 'ctl\u0001']
    styles = ["min", "go", "upper", "py", "all"]
    m = lambda i: json.dumps(messages(c.name, i), separators=(",", ":"))
    ids = []
    for i in range(88):
        s = "%s-%d" % (stems[i % len(stems)], i)
        ids.append(s)
        style = styles[(i // len(stems)) % len(styles)]
        if i % 4 == 3:  # Python's default separators
            c.prompt(skey(s), '{"id": %s, "messages": %s}' % (jstr(s, style), m(i)))
        else:
            c.prompt(skey(s), '{"id":%s,"messages":%s}' % (jstr(s, style), m(i)))
        if rng.random() < 0.45:
            old_style = rng.choice([x for x in styles if x != style])
            rec = json.dumps(old_record(rng, c.name, 0), separators=(",", ":"))
            c.done(skey(s), '{"id":%s,%s' % (jstr(s, old_style), rec[len('{"id":0,'):]))
    # the same ids again in another escape form: the same prompt, done once
    for i in (0, 3, 13, 20):
        s = ids[i]
        c.prompt(skey(s), '{"id":%s,"messages":%s}' % (jstr(s, "all"), m(500 + i)))
    return c


def odd_ids(rng):
    c = Cat("odd_ids")
    m = lambda i: json.dumps(messages(c.name, i), separators=(",", ":"))
    for i in range(20):
        s = "odd-%d" % i
        c.prompt(skey(s), '{"id":%s,"messages":%s}' % (json.dumps(s), m(i)))
    c.prompt(skey(""), '{"id":"","messages":%s}' % m(100))  # the empty string is an id
    # objects, arrays and booleans: supported canonically or rejected, never fatal
    c.prompt('o:{"a":n:1,"b":[n:2]}', '{"id":{"a":1,"b":[2]},"messages":%s}' % m(101), optional=True)
    c.prompt('a:[n:1,s:x]', '{"id":[1,"x"],"messages":%s}' % m(102), optional=True)
    c.prompt('b:true', '{"id":true,"messages":%s}' % m(103), optional=True)
    c.prompt('o:{}', '{"id":{},"messages":%s}' % m(104), optional=True)
    # no usable id: bad prompts
    for line in ['{"id":null,"messages":%s}' % m(105), '{"messages":%s}' % m(106),
                 '{"ID":"odd-noid","messages":%s}' % m(107), '[1,2,3]', '"just a string"']:
        c.prompts.append(line)
        c.bad_prompts += 1
    # old records: an object id with its keys in the other order (equal), odd-1..odd-5
    rec = json.dumps(old_record(rng, c.name, 0), separators=(",", ":"))[len('{"id":0,'):]
    c.done('o:{"a":n:1,"b":[n:2]}', '{"id":{"b":[2.0],"a":1},%s' % rec)
    for i in range(1, 6):
        c.done(skey("odd-%d" % i), '{"id":"odd-%d",%s' % (i, rec))
    return c


def main():
    rng = random.Random(SEED)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    with open(os.path.join(OUT, ".gitattributes"), "w") as f:
        f.write("# byte-exact: CRLF, a BOM and NULs are the point of this corpus\n* -text -diff\n")
    for make in (py_default, py_utf8, key_order, numbers, crlf_bom, damaged, stale, escapes, odd_ids):
        c = make(random.Random(rng.randrange(1 << 32)))
        c.write()
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(OUT) for f in fs)
    print("wrote %s (%d bytes)" % (os.path.normpath(OUT), total))


if __name__ == "__main__":
    main()
