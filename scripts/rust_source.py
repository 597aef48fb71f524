"""Rust source read as text, for the scripts beside this file: comments and
string literals blanked out, `#[cfg(test)]` modules dropped. No parser: a
macro's output and a raw string's content are not seen as code, which the
scripts that use this accept (they look at paths and braces only).
"""

import os
import re

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(text):
    """Source without comments and string literals (kept as blank quotes),
    line for line: every newline stays where it was."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            start, depth, i = i, 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append("\n" * text.count("\n", start, i))
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not re.match(r"\w", text[i - 1:i] or " "):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            # A char literal ('"', '{'); lifetimes ('a) are left alone.
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_modules(text):
    """Drops `#[cfg(test)] mod NAME { ... }` blocks and `#[cfg(test)] mod NAME;`."""
    out, depth_skip = [], None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
            nxt = lines[i + 1].strip()
            if re.match(r"(pub(\([^)]*\))? )?mod " + IDENT + r"\s*;", nxt):
                i += 2
                continue
            if re.match(r"(pub(\([^)]*\))? )?mod " + IDENT + r"\s*\{", nxt):
                depth, j = 0, i + 1
                while j < len(lines):
                    depth += lines[j].count("{") - lines[j].count("}")
                    j += 1
                    if depth <= 0:
                        break
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def default_dirs():
    """The source directories of the whole workspace: the root package's
    src/ and every crate's, and the C of the BPF programs (which
    check-module-cycles, reading Rust only, passes over)."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = os.path.join(top, "crates")
    return [os.path.join(top, "src")] + sorted(
        os.path.join(crates, c, "src") for c in os.listdir(crates)
        if os.path.isdir(os.path.join(crates, c, "src"))) + [
        os.path.join(crates, "endpoints", "bpf")]

