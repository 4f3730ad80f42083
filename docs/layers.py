#!/usr/bin/env python3
"""Draws docs/layers.svg: memra's folders as layers, from the #include lines
and, inside core/, from which file calls which.

    python3 docs/layers.py            # rewrite docs/layers.svg
    python3 docs/layers.py --check    # exit 1 if a folder reaches itself again (an include or,
                                      # in core/, a call), a file circle in core/ is not one
                                      # of KNOWN_CIRCLES, a label overflows its box, or
                                      # docs/layers.svg is not what this script draws now
    python3 docs/layers.py --calls    # print core/'s room and file call graphs

Dashed arrows are the links that are not includes: tools/ uses the public
API of libmemra (core), and the core loads the GPU modules with dlopen and
hands them the host services (include/memra/module.h); they order the rows
but are not checked for cycles.

A folder is a top-level folder (base, jit, arch, tools) or, under modules/
and core/, a module, layer or room folder (modules/gpu, modules/host,
core/routing, core/observe, ...). An arrow A -> B means a file of A includes
a file of B, or (in core/) a file of A uses a function, variable or type that
a file of B defines. Folders are drawn in rows by the longest chain below
them, so every arrow points down. Public headers (include/memra) are left
out: every layer may use them. Standard library only; the output is
deterministic.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = ["base", "core", "jit", "arch", "modules", "tools"]
DASHED = [("tools", "core/runtime"), ("core/load", "modules/sm90"), ("core/load", "modules/sm120"),
          ("core/load", "modules/mmq"), ("core/load", "modules/fp8blk"), ("core/load", "modules/portable")]
NOTES = {
    "tools": "the memra program (public API only)",
    "core/runtime": "memra_open/close, configuration, JIT API, the trial's second phase",
    "core/load": "module files: trust, dlopen, score and init, trials, admission",
    "core/observe": "observers: admission self-check, shadow A/B, tune races",
    "core/files": "model files: GGUF, safetensors, JSON",
    "core/weights": "weights, their operands, block formats",
    "core/routing": "records, snapshots, prefer/deny, tune table, dispatch, ledger, verdicts",
    "core/device": "contexts, host services, buffers, scratch, timers, trial report",
    "core/state": "the private layouts every room shares (no code)",
    "arch": "architecture profiles",
    "jit": "NVRTC compile service, cubin cache",
    "base": "errors, configuration, trust, driver table, quantisation",
    "modules/host": "CPU reference module (built in)",
    "modules/sm90": "descriptor: Hopper",
    "modules/sm120": "descriptor: consumer Blackwell",
    "modules/mmq": "descriptor: MMQ floor, probe",
    "modules/fp8blk": "descriptor: block-128 FP8",
    "modules/portable": "descriptor: any cc >= 8.0 (SASS + PTX)",
    "modules/kernels": "kernel families: .cu, shared header, launchers",
    "modules/gpu": "GPU runtime: context, loader, launch, cuBLASLt",
}
# File circles inside one core/ room that are allowed, each with the reason
# docs/ARCHITECTURE.md ("Rooms of core/") gives. A circle not listed fails the
# check, and so does a listed one that is gone (keep this list true).
KNOWN_CIRCLES = {
    ("core/files/file.c", "core/files/file_experts.c", "core/files/file_gguf.c", "core/files/file_st.c"):
        "the reader and its parsers: file.c calls each format's parser and the expert grouping, which add "
        "tensors, metadata and mappings through file.c and read FP8 scales with its lookup",
}


def folder(path):
    parts = path.split("/")
    if parts[0] in ("modules", "core") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def graph():
    edges = {}
    nodes = set()
    for top in TOP:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".cu", ".cuh")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
                src = folder(rel)
                nodes.add(src)
                with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                    text = fh.read()
                for inc in re.findall(r'#include "([^"]+)"', text):
                    for cand in (os.path.normpath(os.path.join(os.path.dirname(rel), inc)), inc,
                                 os.path.join("modules", inc)):
                        if os.path.exists(os.path.join(ROOT, cand)):
                            break
                    else:
                        continue
                    if cand.startswith("include/"):
                        continue
                    dst = folder(cand)
                    if dst != src:
                        edges.setdefault(src, set()).add(dst)
                        nodes.add(dst)
    _, calls = core_calls()
    for a, bs in calls.items():
        for b in bs:
            if folder(a) != folder(b):
                edges.setdefault(folder(a), set()).add(folder(b))
    return sorted(nodes), {k: sorted(v) for k, v in edges.items()}


# ---- core/'s call graph: which file defines and which uses each memra_ name ----

NAME = re.compile(r"\bmemra__?\w+")


def strip(text):
    """Comments, literals and preprocessor lines out (names in them are no use)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def scan(text):
    """(names defined at file scope, name -> uses). A use is a mention that is
    not a declaration of the name itself; static names count for headers only."""
    t = strip(text)
    defs, decls, depth, start = [], [], 0, 0
    for m in re.finditer(r"[{};]", t):
        head = t[start:m.start()]
        if m.group() == "{":
            if depth == 0:
                fn = re.search(r"\b(memra__?\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*$", head)
                var = re.search(r"\b(memra__?\w+)\s*(?:\[[^\]]*\])?\s*=\s*$", head)
                name = fn.group(1) if fn else var.group(1) if var else None
                if name and not re.match(r"\s*(typedef|struct|enum|union)\b", head):
                    defs.append((name, bool(re.search(r"\bstatic\b", head))))
            depth += 1
        elif m.group() == "}":
            depth -= 1
            if depth == 0:
                start = m.end()
        elif depth == 0:
            proto = re.search(r"\b(memra__?\w+)\s*\(", head)
            var = re.search(r"\b(memra__?\w+)\s*(?:\[[^\]]*\])?\s*(=[^;]*)?$", head)
            if re.search(r"\b(extern)\b", head) or (proto and "=" not in head.split("(")[0]):
                if proto:
                    decls.append(proto.group(1))
            elif var and "(" not in head.split("=")[0]:
                defs.append((var.group(1), bool(re.search(r"\bstatic\b", head))))
            start = m.end()
    uses = {}
    for n in NAME.findall(t):
        uses[n] = uses.get(n, 0) + 1
    for n in decls + [d for d, _ in defs]:
        uses[n] -= 1
    return defs, {n: c for n, c in uses.items() if c > 0}


def core_calls():
    """File -> {file it uses: names}, over core/'s .c and .h files."""
    files = []
    for dirpath, _, names in os.walk(os.path.join(ROOT, "core")):
        files += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in names if f.endswith((".c", ".h"))]
    owner, uses = {}, {}
    for rel in sorted(files):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
            defs, uses[rel] = scan(fh.read())
        for name, static in defs:
            if not (static and rel.endswith(".c")):
                owner.setdefault(name, rel)
    calls = {}
    for rel in sorted(files):
        for name in uses[rel]:
            o = owner.get(name)
            if o is not None and o != rel:
                calls.setdefault(rel, {}).setdefault(o, set()).add(name)
    return sorted(files), calls


def circles(nodes, edges):
    """The strongly connected components of more than one node (Tarjan), sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def file_circles():
    """Circles between core/'s files. A header's own inline functions calling
    into its .c (tune_stats.h -> tune_stats.c) are one file's business, not an arrow."""
    files, calls = core_calls()
    stem = lambda f: os.path.splitext(f)[0]
    edges = {a: sorted(b for b in bs if not (a.endswith(".h") and stem(a) == stem(b))) for a, bs in calls.items()}
    return circles(files, edges)


def print_calls():
    files, calls = core_calls()
    rooms = {}
    for a, bs in calls.items():
        for b, names in bs.items():
            if folder(a) != folder(b):
                rooms.setdefault((folder(a), folder(b)), set()).update(names)
    print("rooms of core/ (an arrow: a file of the first uses names the second defines):")
    for (a, b), names in sorted(rooms.items()):
        print("  %s -> %s: %s" % (a, b, " ".join(sorted(names))))
    print("files of core/:")
    for a in sorted(calls):
        for b in sorted(calls[a]):
            print("  %s -> %s: %s" % (a, b, " ".join(sorted(calls[a][b]))))


def levels(nodes, edges):
    memo = {}
    links = {k: list(v) for k, v in edges.items()}
    for a, b in DASHED:
        if a in nodes and b in nodes:
            links.setdefault(a, []).append(b)

    def depth(n, stack=()):
        if n in memo:
            return memo[n]
        d = 0
        for m in links.get(n, []):
            if m not in stack:
                d = max(d, 1 + depth(m, stack + (n,)))
        memo[n] = d
        return d

    return {n: depth(n) for n in nodes}


BW, BH, GX, GY, PAD = 250, 64, 24, 46, 20
CHAR_W = 6.3  # an upper bound of an 11px sans-serif character's advance, for the overflow check


def wrap(text, width):
    """Greedy word wrap of a note into lines of at most `width` characters."""
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    return lines + ([cur] if cur else [])


def note_lines(n):
    return wrap(NOTES.get(n, ""), int((BW - 12) / CHAR_W))


def overflows(nodes):
    """Labels that cannot fit their box: more than two note lines, or a line too wide."""
    bad = []
    for n in nodes:
        lines = note_lines(n)
        if len(lines) > 2 or any(len(s) * CHAR_W > BW - 12 for s in lines) or (len(n) + 1) * 9.0 > BW - 12:
            bad.append(n)
    return bad


def svg(nodes, edges):
    lv = levels(nodes, edges)
    rows = {}
    for n in nodes:
        rows.setdefault(lv[n], []).append(n)
    top = max(rows)
    bw, bh, gx, gy, pad = BW, BH, GX, GY, PAD
    width = max(len(r) for r in rows.values()) * (bw + gx) - gx + 2 * pad
    height = (top + 1) * (bh + gy) - gy + 2 * pad + 30
    pos = {}
    for level, row in rows.items():
        y = pad + 30 + (top - level) * (bh + gy)
        x0 = (width - (len(row) * (bw + gx) - gx)) / 2
        if len(row) == 1:  # a chain of single rooms zigzags, so an arrow that skips a row passes beside it
            x0 += (bw / 2 + gx) * (1 if level % 2 else -1)
        for i, n in enumerate(sorted(row)):
            pos[n] = (x0 + i * (bw + gx), y)
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
        'font-family="sans-serif">' % (width, height, width, height),
        '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="%d" y="%d" font-size="15" font-weight="bold">memra layers: an arrow is an #include or, in core/, '
        'a call (dashed: public API, dlopen + host services; generated by docs/layers.py)</text>' % (pad, pad + 8),
    ]
    for a in nodes:
        for b in edges.get(a, []):
            (xa, ya), (xb, yb) = pos[a], pos[b]
            out.append('<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#555" stroke-width="1.3" '
                       'marker-end="url(#a)"/>' % (xa + bw / 2, ya + bh, xb + bw / 2, yb))
    for a, b in DASHED:
        if a in pos and b in pos:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            out.append('<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#888" stroke-width="1.3" '
                       'stroke-dasharray="6,4" marker-end="url(#a)"/>' % (xa + bw / 2, ya + bh, xb + bw / 2, yb))
    for n in nodes:
        x, y = pos[n]
        fill = ("#e8f0fe" if n.startswith("modules/") else "#eef7ee" if n == "base"
                else "#fff8d6" if n.startswith("core/") else "#fdf3e4")
        out.append('<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="6" fill="%s" stroke="#333"/>'
                   % (x, y, bw, bh, fill))
        out.append('<text x="%.0f" y="%.0f" font-size="14" font-weight="bold" text-anchor="middle">%s/</text>'
                   % (x + bw / 2, y + 22, n))
        for i, line in enumerate(note_lines(n)):
            out.append('<text x="%.0f" y="%.0f" font-size="11" text-anchor="middle">%s</text>'
                       % (x + bw / 2, y + 40 + 14 * i, line))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if "--calls" in sys.argv:
        print_calls()
        return 0
    nodes, edges = graph()
    bad = circles(nodes, edges)
    fc = file_circles()
    unknown = [c for c in fc if c not in KNOWN_CIRCLES]
    gone = [c for c in KNOWN_CIRCLES if c not in fc]
    wide = overflows(nodes)
    path = os.path.join(ROOT, "docs", "layers.svg")
    if "--check" in sys.argv:
        for c in bad:
            print("cycle: %s reach each other (includes, or calls in core/)" % ", ".join(c))
        for c in fc:
            print("file circle in core/ (%s): %s" % ("explained" if c in KNOWN_CIRCLES else "NOT EXPLAINED",
                                                     " ".join(c)))
        for c in gone:
            print("KNOWN_CIRCLES lists a circle that is gone: %s" % " ".join(c))
        for n in wide:
            print("the label of %s/ does not fit its box" % n)
        try:
            with open(path, encoding="utf-8") as fh:
                stale = fh.read() != svg(nodes, edges)
        except OSError:
            stale = True
        if stale:
            print("docs/layers.svg is out of date: run python3 docs/layers.py")
        fail = bad or unknown or gone or wide or stale
        print("FAIL" if fail else "no cycle between folders or rooms; core/'s file circles explained; "
              "docs/layers.svg current")
        return 1 if fail else 0
    if bad or wide:
        print("cycles: %s; labels too wide: %s" % (bad, wide), file=sys.stderr)
        return 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(svg(nodes, edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
