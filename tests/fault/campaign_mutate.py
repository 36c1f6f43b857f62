"""The REST fuzzer's body pieces, every choice from the Random it is given: chunked framing, percent-encoding,
structure-level mutations of a JSON-like value, YAML serialisation, and text-level mutations of a serialised
body."""
import json
import re


# -- framing and encoding

def chunked(body, r):
    out, i = b"", 0
    while i < len(body):
        n = r.randint(1, max(1, len(body) - i))
        out += b"%x\r\n" % n + body[i : i + n] + b"\r\n"
        i += n
    return out + b"0\r\n\r\n"


def pct(text, r):
    """Percent-encodes some characters (all that a request target may not hold raw)."""
    out = []
    for ch in text.encode("utf-8"):
        c = chr(ch)
        if ch <= 0x20 or ch >= 0x7f or c in "&=#?%" and r.random() < 0.5 or r.random() < 0.05:
            out.append("%%%02X" % ch)
        else:
            out.append(c)
    return "".join(out)


# -- structure-level mutations of a JSON-like value

def random_scalar(r):
    return r.choice([None, True, False, 0, -1, 1, 1.5, -0.0, 2 ** 31, 2 ** 63, -2 ** 63, 2 ** 64 + 1, 10 ** 40,
                     1e308, -1e308, "", "x", "0", "1e9999", "-", "\u0000", "\ud800", "\u00e9" * 50, "9" * 400,
                     "1Ti", "99999999Ei", "-5Gi", "1.5.6", "NaN", "Infinity", " 5 ", "5m", "100%"])


def random_value(r, depth=0):
    x = r.random()
    if depth > 3 or x < 0.6:
        return random_scalar(r)
    if x < 0.8:
        return [random_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    return {"k%d" % i: random_value(r, depth + 1) for i in range(r.randint(0, 3))}


def nested(depth, r):
    value = r.choice([1, "x", None])
    for _ in range(depth):
        value = [value] if r.random() < 0.5 else {"n": value}
    return value


def paths_in(value, prefix=()):
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_in(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths_in(v, prefix + (i,))
    return out


def set_at(value, path, new):
    if not path:
        return new
    holder = value
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return value


def mutate_value(value, r):
    value = json.loads(json.dumps(value))
    for _ in range(r.randint(1, 3)):
        targets = [p for p in paths_in(value) if p]
        op = r.randrange(9)
        if op == 0 and targets:  # drop a field
            p = r.choice(targets)
            holder = value
            for key in p[:-1]:
                holder = holder[key]
            if isinstance(holder, dict):
                holder.pop(p[-1], None)
            elif isinstance(holder, list) and holder:
                holder.pop(p[-1])
        elif op == 1 and targets:  # retype a field
            value = set_at(value, r.choice(targets), random_value(r))
        elif op == 2 and targets:  # a huge or odd number
            value = set_at(value, r.choice(targets), r.choice([2 ** 63, 2 ** 64, 10 ** 30, -2 ** 63 - 1, 1e308,
                                                               float("inf"), float("nan"), 10 ** 400, -1]))
        elif op == 3:  # deep nesting, up to ~200 levels
            depth = r.choice([10, 63, 64, 65, 100, 150, 200])
            p = r.choice(targets) if targets and r.random() < 0.7 else ("deep",)
            try:
                value = set_at(value, p, nested(depth, r))
            except (KeyError, IndexError, TypeError):
                pass
        elif op == 4 and isinstance(value, dict):  # an unknown field
            value["unknown_%d" % r.randint(0, 9)] = random_value(r)
        elif op == 5 and targets:  # a long string
            value = set_at(value, r.choice(targets), "L" * r.choice([300, 5000, 70000, 300000]))
        elif op == 6 and isinstance(value, dict):  # many keys
            value["env"] = {"E%d" % i: "v" for i in range(r.choice([100, 1000, 5000]))}
        elif op == 7:  # the whole body another type
            value = r.choice([[], [value], "text", 42, None, True, {}])
        elif op == 8 and targets:  # a string with odd characters
            value = set_at(value, r.choice(targets), r.choice(["\u0000", "a\u0000b", "\ud800", "\udfff", "\u202e",
                                                               "\\", "\"", "\n", "$(id)", "`id`", "; rm -rf /",
                                                               "../../etc/passwd", "%s%n", "\u00e9\u4e2d\U0001f600"]))
        if not isinstance(value, (dict, list)):
            break
    return value


# -- text-level mutations of a serialised body

YAML_SNIPPETS = [
    b"%YAML 1.1\n---\n", b"--- !!map\n", b"\xef\xbb\xbf", b"!!binary aGVsbG8=", b"!custom {}", b"&a [1, *a]",
    b"<<: *nothing\n", b"? [complex, key]\n: v\n", b"name: !!str 1\n", b"!!python/object:os.system ['id']\n",
    b"x: &anchor {a: 1}\ny: *anchor\n", b"...\n", b"\t", b"- - - - - - - -\n", b"{", b"]", b"'", b'"', b"#", b": :",
    b"@", b"`", b"|\n  block\n", b">-\n  folded\n", b"\r\n", b"\r",
]
BAD_BYTES = [b"\xff", b"\xfe", b"\xc3\x28", b"\xa0\xa1", b"\xe2\x28\xa1", b"\xf0\x28\x8c\x28", b"\xed\xa0\x80",
             b"\xc0\xaf", b"\xf8\x88\x80\x80\x80", b"\x00", b"\x00\x00\x00", b"\x1b[31m"]


def to_yaml(value, r, indent=0):
    pad = b"  " * indent
    if isinstance(value, dict) and value:
        out = b""
        for k, v in value.items():
            key = yaml_scalar(k, r)
            if isinstance(v, dict) and v:
                out += pad + key + b":\n" + to_yaml(v, r, indent + 1)
            elif isinstance(v, list) and v and r.random() < 0.5 and all(not isinstance(x, (dict, list)) for x in v):
                out += pad + key + b":\n" + b"".join(pad + b"  - " + yaml_scalar(x, r) + b"\n" for x in v)
            else:
                out += pad + key + b": " + yaml_flow(v, r) + b"\n"
        return out
    return pad + yaml_flow(value, r) + b"\n"


def yaml_flow(value, r):
    if isinstance(value, dict):
        return b"{" + b", ".join(yaml_scalar(k, r) + b": " + yaml_flow(v, r) for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b", ".join(yaml_flow(v, r) for v in value) + b"]"
    return yaml_scalar(value, r)


def yaml_scalar(value, r):
    if value is None:
        return r.choice([b"null", b"~", b""])
    if value is True or value is False:
        return b"true" if value else b"false"
    if isinstance(value, float):
        if value != value:
            return b".nan"
        if value in (float("inf"), float("-inf")):
            return b".inf" if value > 0 else b"-.inf"
        return repr(value).encode()
    if isinstance(value, int):
        return str(value).encode()
    text = str(value)
    if re.fullmatch(r"[A-Za-z_/][A-Za-z0-9_./-]*", text) and text not in ("true", "false", "null", "yes", "no",
                                                                         "on", "off", "y", "n") and r.random() < 0.7:
        return text.encode()
    return json.dumps(text, ensure_ascii=r.random() < 0.5).encode("utf-8", "surrogatepass")


def mutate_text(text, r, yaml):
    for _ in range(r.randint(1, 2)):
        op = r.randrange(10)
        at = r.randrange(len(text) + 1)
        if op == 0:  # duplicate a line (a duplicated key in YAML) or a key (JSON)
            if yaml:
                lines = text.split(b"\n")
                i = r.randrange(len(lines))
                lines.insert(i, lines[i])
                text = b"\n".join(lines)
            elif text.startswith(b"{") and len(text) > 2:
                text = b'{"name": "dup", ' + text[1:] if r.random() < 0.5 else text[:-1] + b', "name": "dup"}'
        elif op == 1:  # invalid UTF-8
            text = text[:at] + r.choice(BAD_BYTES) + text[at:]
        elif op == 2:  # NUL bytes
            text = text[:at] + b"\x00" * r.randint(1, 4) + text[at:]
        elif op == 3:  # several documents
            text = text + b"\n---\n" + (text if r.random() < 0.5 else b"name: second\n") if yaml else text + text
        elif op == 4:  # cut short
            text = text[:at]
        elif op == 5:  # flipped bytes
            text = bytearray(text)
            for _ in range(r.randint(1, 8)):
                if text:
                    text[r.randrange(len(text))] = r.randrange(256)
            text = bytes(text)
        elif op == 6:  # YAML's odd corners
            text = text[:at] + r.choice(YAML_SNIPPETS) + text[at:]
        elif op == 7:  # brackets deep, up to 200
            depth = r.choice([64, 65, 120, 200])
            text = text[:at] + b"[" * depth + b"]" * depth + text[at:]
        elif op == 8:  # block nesting (indentation, no brackets) ~200 levels deep
            depth = r.choice([50, 100, 200])
            text = b"".join(b" " * i + b"k%d:\n" % i for i in range(depth)) + b" " * depth + b"v: 1\n" if yaml else \
                b"[" * depth + b"1" + b"]" * depth
        else:  # nothing useful at all
            text = r.choice([b"", b" ", b"\n\n", b"null", b"[]", b"42", b'"s"', b"---", b"--- \n...\n", b"{}"])
        if len(text) > 1100000:
            text = text[:1100000]
    return text
