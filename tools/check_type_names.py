#!/usr/bin/env python3
"""Fails if one type name is defined twice in one namespace across headers.

Two different types with one fully qualified name, linked into one binary,
break the one-definition rule silently: the linker does not report it. This
reads every header of the workspace (not generated code or test data),
follows `namespace` blocks, and collects the classes, structs, enums and
aliases defined at namespace scope.

Usage: check_type_names.py [WORKSPACE_ROOT]
Without an argument it finds the workspace from its own (symlinked) path, so
it also runs as a Bazel test.
"""

import collections
import os
import re
import sys

SKIP_DIRS = {"third_party", "testdata", ".git", "node_modules"}
NAMESPACE = re.compile(r"^\s*(?:inline\s+)?namespace\s*([\w:]*)\s*\{")
DEFINITION = re.compile(
    r"^(?:template\s*<[^>]*>\s*)?(?:class|struct|enum(?:\s+class)?|union)\s+"
    r"(?:\[\[[^\]]*\]\]\s*)?(?:ABSL_\w+\s+)?(\w+)\s*(?:final\s*)?(?::(?!:)|\{)")
ALIAS = re.compile(r"^using\s+(\w+)\s*=")


def workspace_root():
    if len(sys.argv) > 1:
        return sys.argv[1]
    here = os.path.dirname(os.path.realpath(__file__))
    return os.path.dirname(here)


def strip_comments_and_strings(line, in_block):
    out = []
    i = 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_block = False
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            in_block = True
            i += 2
        elif line[i] == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_block


def definitions(path):
    """Yields (qualified name, line number) of namespace-scope types."""
    stack = []  # one entry per open brace: a namespace name or None
    in_block = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, raw in enumerate(f, 1):
            line, in_block = strip_comments_and_strings(raw, in_block)
            if line.lstrip().startswith("#"):
                continue
            at_namespace_scope = all(s is not None for s in stack)
            ns = NAMESPACE.match(line)
            if ns:
                stack.append(ns.group(1) or "(anonymous)")
                rest = line[line.index("{") + 1:]
                line = rest
            elif at_namespace_scope:
                m = DEFINITION.match(line.strip()) or ALIAS.match(line.strip())
                if m:
                    names = [s for s in stack if s]
                    yield "::".join(names + [m.group(1)]), number
            for ch in line:
                if ch == "{":
                    stack.append(None)
                elif ch == "}" and stack:
                    stack.pop()


def main():
    root = workspace_root()
    seen = collections.defaultdict(list)
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs
                   if d not in SKIP_DIRS and not d.startswith("bazel-")]
        for name in files:
            if not name.endswith(".h"):
                continue
            path = os.path.join(directory, name)
            for qualified, number in definitions(path):
                if "(anonymous)" in qualified:
                    continue
                seen[qualified].append(
                    "%s:%d" % (os.path.relpath(path, root), number))
    duplicates = {k: v for k, v in seen.items()
                  if len({p.split(":")[0] for p in v}) > 1}
    for name, places in sorted(duplicates.items()):
        print("%s is defined in more than one header: %s"
              % (name, ", ".join(places)))
    if duplicates:
        return 1
    print("%d type names, none defined twice in one namespace" % len(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
