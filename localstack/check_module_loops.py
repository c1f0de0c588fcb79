#!/usr/bin/env python3
"""Import loops inside a crate (run by the test command beside the crate arrows).

The crates point one way (`check_arrows` in lib.sh); so must the modules inside each crate,
and the modules inside each of its rooms (a folder module with a mod.rs).
For every crate of the workspace this reads which of the crate's top-level modules each
module names (`crate::name`, `crate::{name, ...}`, or an item the crate root re-exports from
it, as `crate::App` for `pub use root::App`), outside comments, and reports every cycle: two or more modules
that reach each other. Standard library only; prints the loops and exits 1 if there is one.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.MULTILINE)
REFERENCE = re.compile(r"\bcrate::(\w+)")
GROUP = re.compile(r"\bcrate::\{([^}]*)\}")
REEXPORT = re.compile(r"^\s*pub\s+use\s+(\w+)::(\{[^}]*\}|\w+)\s*;", re.MULTILINE)


def code_only(text):
    """The text without comments (line and block) and string literals."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def crates():
    for manifest in sorted(ROOT.glob("**/Cargo.toml")):
        parts = manifest.relative_to(ROOT).parts
        if any(p in ("target", ".git") or p.startswith(".") for p in parts):
            continue
        if (manifest.parent / "src").is_dir():
            yield manifest.parent


def module_graph(crate):
    src = crate / "src"
    roots = [src / name for name in ("lib.rs", "main.rs") if (src / name).exists()]
    modules = set()
    for root in roots:
        modules.update(MODULE.findall(code_only(root.read_text(encoding="utf-8"))))
    # Items the crate root re-exports: `crate::App` is a use of `root`.
    exported = {}
    for root in roots:
        for module, items in REEXPORT.findall(code_only(root.read_text(encoding="utf-8"))):
            if module in modules:
                for item in re.findall(r"\w+", items):
                    exported.setdefault(item, module)
    graph = {m: set() for m in modules}
    for module in modules:
        files = [src / f"{module}.rs"] + sorted((src / module).rglob("*.rs"))
        for path in files:
            if not path.exists():
                continue
            code = code_only(path.read_text(encoding="utf-8"))
            names = REFERENCE.findall(code)
            for group in GROUP.findall(code):
                names += [item.strip().split("::")[0] for item in group.split(",") if item.strip()]
            for name in names:
                target = name if name in modules else exported.get(name)
                if target and target != module:
                    graph[module].add(target)
    return graph


def room_graphs(crate):
    """The modules inside each folder module with a mod.rs (a room), by the same references
    (`crate::name` through the root's re-export, or `super::name`): a room hides no loop."""
    src = crate / "src"
    graphs = {}
    for mod_rs in sorted(src.glob("*/mod.rs")):
        room = mod_rs.parent
        members = set(MODULE.findall(code_only(mod_rs.read_text(encoding="utf-8"))))
        graph = {m: set() for m in members}
        for member in members:
            path = room / f"{member}.rs"
            if not path.exists():
                continue
            code = code_only(path.read_text(encoding="utf-8"))
            names = REFERENCE.findall(code) + re.findall(r"\bsuper::(\w+)", code)
            for group in GROUP.findall(code):
                names += [item.strip().split("::")[0] for item in group.split(",") if item.strip()]
            graph[member] |= {n for n in names if n in members and n != member}
        graphs[room.name] = graph
    return graphs


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main():
    loops, checked = [], 0
    for crate in crates():
        graph = module_graph(crate)
        checked += 1
        graphs = [("", graph)] + [(f"{room}/", g) for room, g in room_graphs(crate).items()]
        for prefix, graph in graphs:
            for component in cycles(graph):
                edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
                where = f"{crate.relative_to(ROOT)}/{prefix}".rstrip("/")
                loops.append(f"{where}: {', '.join(component)} ({'; '.join(edges)})")
    for loop in loops:
        print(f"import loop in {loop}")
    print(f"module loops: {checked} crates, {len(loops)} loops")
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())
