#!/usr/bin/env python3
"""Draws docs/layers.svg: memra's folders as layers, from the #include lines.

    python3 docs/layers.py            # rewrite docs/layers.svg
    python3 docs/layers.py --check    # exit 1 if a folder includes one that includes it back,
                                      # or docs/layers.svg is not what this script draws now

Dashed arrows are the links that are not includes: tools/ uses the public
API of libmemra (core), and the core loads the GPU modules with dlopen and
hands them the host services (include/memra/module.h); they order the rows
but are not checked for cycles.

A folder is a top-level folder (base, core, jit, arch, tools) or, under
modules/, a module or layer folder (modules/gpu, modules/kernels, modules/host,
modules/sm90, ...). An arrow A -> B means a file of A includes a file of B.
Folders are drawn in rows by the longest include chain below them, so every
arrow points down. Public headers (include/memra) are left out: every layer
may use them. Standard library only; the output is deterministic.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = ["base", "core", "jit", "arch", "modules", "tools"]
DASHED = [("tools", "core"), ("core", "modules/sm90"), ("core", "modules/sm120"), ("core", "modules/mmq"),
          ("core", "modules/fp8blk"), ("core", "modules/portable")]
NOTES = {
    "tools": "the memra program (public API only)",
    "core": "runtime, registry, dispatch, weights, services",
    "arch": "architecture profiles",
    "jit": "NVRTC compile service, cubin cache",
    "base": "errors, configuration, trust, driver table, block formats",
    "modules/host": "CPU reference module (built in)",
    "modules/sm90": "descriptor: Hopper",
    "modules/sm120": "descriptor: consumer Blackwell",
    "modules/mmq": "descriptor: MMQ floor, probe",
    "modules/fp8blk": "descriptor: block-128 FP8",
    "modules/portable": "descriptor: any cc >= 8.0 (SASS + PTX)",
    "modules/kernels": "kernel families: .cu, shared header, launchers",
    "modules/gpu": "GPU runtime: context, loader, launch, cuBLASLt",
}


def folder(path):
    parts = path.split("/")
    if parts[0] == "modules" and len(parts) > 2:
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
    return sorted(nodes), {k: sorted(v) for k, v in edges.items()}


def cycles(nodes, edges):
    found = []

    def reach(a, b, seen):
        for n in edges.get(a, []):
            if n == b:
                return True
            if n not in seen:
                seen.add(n)
                if reach(n, b, seen):
                    return True
        return False

    for a in nodes:
        for b in edges.get(a, []):
            if reach(b, a, set()):
                found.append((a, b))
    return found


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


def svg(nodes, edges):
    lv = levels(nodes, edges)
    rows = {}
    for n in nodes:
        rows.setdefault(lv[n], []).append(n)
    top = max(rows)
    bw, bh, gx, gy, pad = 250, 54, 24, 46, 20
    width = max(len(r) for r in rows.values()) * (bw + gx) - gx + 2 * pad
    height = (top + 1) * (bh + gy) - gy + 2 * pad + 30
    pos = {}
    for level, row in rows.items():
        y = pad + 30 + (top - level) * (bh + gy)
        x0 = (width - (len(row) * (bw + gx) - gx)) / 2
        for i, n in enumerate(sorted(row)):
            pos[n] = (x0 + i * (bw + gx), y)
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
        'font-family="sans-serif">' % (width, height, width, height),
        '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="%d" y="%d" font-size="15" font-weight="bold">memra layers: an arrow is an #include '
        '(dashed: public API, dlopen + host services; generated by docs/layers.py)</text>' % (pad, pad + 8),
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
        fill = "#e8f0fe" if n.startswith("modules/") else "#eef7ee" if n == "base" else "#fdf3e4"
        out.append('<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="6" fill="%s" stroke="#333"/>'
                   % (x, y, bw, bh, fill))
        out.append('<text x="%.0f" y="%.0f" font-size="14" font-weight="bold" text-anchor="middle">%s/</text>'
                   % (x + bw / 2, y + 22, n))
        out.append('<text x="%.0f" y="%.0f" font-size="11" text-anchor="middle">%s</text>'
                   % (x + bw / 2, y + 40, NOTES.get(n, "")))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    nodes, edges = graph()
    bad = cycles(nodes, edges)
    path = os.path.join(ROOT, "docs", "layers.svg")
    if "--check" in sys.argv:
        for a, b in bad:
            print("cycle: %s includes %s, which includes it back" % (a, b))
        try:
            with open(path, encoding="utf-8") as fh:
                stale = fh.read() != svg(nodes, edges)
        except OSError:
            stale = True
        if stale:
            print("docs/layers.svg is out of date: run python3 docs/layers.py")
        print("no include cycle between folders; docs/layers.svg current" if not bad and not stale else "FAIL")
        return 1 if bad or stale else 0
    if bad:
        print("include cycles: %s" % bad, file=sys.stderr)
        return 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(svg(nodes, edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
