#!/usr/bin/env python3
"""Checks that each layer under src/ uses only the layers docs/ARCHITECTURE.md allows it.

The allowed uses are read from ARCHITECTURE.md's folder table (its "may use" column, with the arrows followed
transitively: a layer may use what the layers it uses may use). A layer's use of another is any
`#include "<other>/..."` in its sources (tests and test data aside: a test may drive a layer through another)
and any `xpool_<other>` in the DEPS of its CMakeLists.txt. Generated code counts as the layer that generates it
(`agent/v1/...` is protocol's, `deviceplugin/...` is k8s's).

Usage: check_layers.py [--root REPO]      exit 0 when every use is allowed, 1 listing each violation
       check_layers.py --self-test        checks the checker on a small tree with a violation in it
"""
import argparse
import os
import re
import sys
import tempfile

# Include prefixes of generated code, and the layer each belongs to.
GENERATED = {"agent/v1": "protocol", "deviceplugin": "k8s"}
# CMake targets that are generated code, and the layer each belongs to.
GENERATED_TARGETS = {"agent_proto": "protocol", "deviceplugin_proto": "k8s"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TABLE_ROW = re.compile(r"^\|\s*`src/([a-z0-9_]+)/`\s*\|.*\|\s*([^|]*)\|\s*$", re.M)
WORD = re.compile(r"[a-z0-9_]+")


def allowed_uses(architecture_text):
    """Layer -> the set of layers it may use (transitively), from the folder table's last column."""
    direct = {}
    for layer, may_use in TABLE_ROW.findall(architecture_text):
        direct[layer] = may_use
    layers = set(direct)
    graph = {}
    for layer, may_use in direct.items():
        words = set(WORD.findall(may_use.lower()))
        graph[layer] = layers - {layer} if "all" in words else (words & layers) - {layer}
    closure = {}
    for layer in graph:
        seen, stack = set(), list(graph[layer])
        while stack:
            other = stack.pop()
            if other in seen:
                continue
            seen.add(other)
            stack.extend(graph.get(other, ()))
        closure[layer] = seen - {layer}
    return closure


def is_test_file(rel):
    name = os.path.basename(rel)
    return name.endswith("_test.cc") or "/testdata/" in rel or "/testing/" in rel


def layer_of_include(path, layers):
    for prefix, owner in GENERATED.items():
        if path.startswith(prefix + "/"):
            return owner
    head = path.split("/", 1)[0]
    return head if head in layers and "/" in path else None


def violations(root):
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        allowed = allowed_uses(f.read())
    if not allowed:
        return ["docs/ARCHITECTURE.md: no folder table found (rows like | `src/<layer>/` | ... | may use |)"]
    out = []
    src = os.path.join(root, "src")
    for layer in sorted(os.listdir(src)):
        layer_dir = os.path.join(src, layer)
        if not os.path.isdir(layer_dir):
            continue
        if layer not in allowed:
            out.append(f"src/{layer}/: not in docs/ARCHITECTURE.md's folder table")
            continue
        ok = allowed[layer] | {layer}
        for dirpath, _, files in os.walk(layer_dir):
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if name == "CMakeLists.txt":
                    out.extend(cmake_violations(root, rel, layer, ok, allowed))
                    continue
                if not name.endswith((".h", ".cc", ".c")) or is_test_file(rel):
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for included in INCLUDE.findall(f.read()):
                        used = layer_of_include(included, allowed)
                        if used is not None and used not in ok:
                            out.append(f"{rel}: includes \"{included}\" but {layer} may not use {used}")
    return out


def cmake_violations(root, rel, layer, ok, allowed):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        text = f.read()
    out = []
    # Only the libraries' dependencies: a test target may link more.
    for call in re.findall(r"xpool_library\((.*?)\)", text, re.S):
        deps = call.split("DEPS", 1)[1] if "DEPS" in call else ""
        for target in re.findall(r"\bxpool_([a-z0-9_]+)", deps):
            used = GENERATED_TARGETS.get(target, target)
            if used in allowed and used not in ok:
                out.append(f"{rel}: the {layer} library links xpool_{target} but {layer} may not use {used}")
    return out


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src", "low"))
        os.makedirs(os.path.join(root, "src", "mid"))
        os.makedirs(os.path.join(root, "src", "top"))
        with open(os.path.join(root, "docs", "ARCHITECTURE.md"), "w") as f:
            f.write("| folder | what | may use |\n|---|---|---|\n| `src/low/` | base | std |\n"
                    "| `src/mid/` | middle | low |\n| `src/top/` | top | mid |\n")

        def write(rel, text):
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)

        write("src/top/a.cc", '#include "low/x.h"\n#include "mid/y.h"\n')  # transitively allowed
        write("src/top/a_test.cc", '#include "top/a.h"\n')
        write("src/mid/b.cc", '#include "low/x.h"\n')
        if violations(root):
            return "a tree without violations was refused: " + "; ".join(violations(root))
        write("src/low/c.cc", '#include "mid/y.h"\n')
        write("src/mid/CMakeLists.txt", "xpool_library(NAME mid SRCS b.cc DEPS xpool_low xpool_top)\n")
        found = violations(root)
        if len(found) != 2 or "low may not use mid" not in found[1] + found[0]:
            return "expected two violations (an include, a link), got: " + "; ".join(found)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        error = self_test()
        print(error or "self-test passed")
        return 1 if error else 0
    found = violations(os.path.abspath(args.root))
    for v in found:
        print(v)
    print(f"{len(found)} layering violation(s)" if found else "every layer uses only what docs/ARCHITECTURE.md allows")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
