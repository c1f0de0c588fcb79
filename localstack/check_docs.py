#!/usr/bin/env python3
"""The docs cannot drift (run by the test command; standard library only).

- Every relative link in the repository's Markdown resolves: its file exists inside the
  repository, and its `#anchor` is a heading of that file (GitHub's slugs). Nothing links or
  names a path outside the repository (a clone has only itself).
- The layout in docs/architecture.md ("Layout in full") names every shared crate, every app
  module and every function, and everything it names under shared/, shared/app/src/,
  functions/ and localstack/ exists.
- Every test the docs name as proof (`system/x.rs::name`, `use_cases/x.rs::name`,
  `shared/.../x.rs::name`, browser `test_name`) exists, so a claim in docs/status.md cannot
  outlive its test.
- docs/architecture.md names every function built on `bouquet_runtime::main!`.

Prints each problem and exits 1 if there is one.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"target", "node_modules", "__pycache__"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
OUTSIDE = re.compile(r"\.\./shared\b")


def markdown_files():
    for path in sorted(ROOT.rglob("*.md")):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in parts[:-1]):
            continue
        yield path


def prose_lines(text, inline_code=False):
    """(line number, line) outside fenced code blocks, inline code removed unless asked for."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line if inline_code else re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_]{1,3}([^*_]+)[*_]{1,3}", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path.read_text(encoding="utf-8"), inline_code=True):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check_links(problems):
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(f"{where}:{number}: names a path outside the repository: {line.strip()}")
        for number, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto:, ...
                file_part, _, anchor = target.partition("#")
                linked = (path.parent / file_part).resolve() if file_part else path
                if ROOT not in linked.parents and linked != ROOT:
                    problems.append(f"{where}:{number}: links outside the repository: {target}")
                    continue
                if not linked.exists():
                    problems.append(f"{where}:{number}: no such file: {target}")
                    continue
                if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                    problems.append(f"{where}:{number}: no heading #{anchor} in {linked.relative_to(ROOT)}")


def layout_block():
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layout in full", 1)[1]
    return section.split("```", 2)[1]


def check_layout(problems):
    top = None
    named = {"shared": set(), "app": set(), "functions": set(), "localstack": set()}
    parent = None
    current_room = None
    for line in layout_block().splitlines():
        if re.match(r"^\S", line):
            top = line.split()[0].rstrip("/").split("/")[0]
            continue
        entry = re.match(r"^  (\S+)", line)
        if entry:
            parent = entry.group(1)
            name = parent.rstrip("/")
            if top == "shared" and parent.endswith("/"):
                named["shared"].add(name)
            elif top == "localstack":
                named["localstack"].add(name)
        module = re.match(r"^    (?:(\w+)/|  )?\s*(\w+)\.rs\b", line) if parent == "app/" else None
        room = re.match(r"^    (\w+)/\s", line) if parent == "app/" else None
        if room and top == "shared":
            current_room = room.group(1)
            named["app"].add(current_room + "/")
        if module and top == "shared" and parent == "app/":
            indent = len(line) - len(line.lstrip())
            name = module.group(2)
            named["app"].add(f"{current_room}/{name}" if indent == 6 else name)
        if top == "functions":
            # The names by trigger (and any function the description names).
            named["functions"].update(re.findall(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b", line))

    def compare(kind, have, named_here):
        for missing in sorted(have - named_here):
            problems.append(f"docs/architecture.md layout: {kind} {missing} exists but is not named")
        for extra in sorted(named_here - have):
            problems.append(f"docs/architecture.md layout: {kind} {extra} is named but does not exist")

    crates = {p.parent.name for p in (ROOT / "shared").glob("*/Cargo.toml")}
    compare("crate shared/", crates, named["shared"])
    app = ROOT / "shared/app/src"
    # Each room is a folder of modules (its mod.rs only names them); live/ is live.rs's own.
    rooms = {p.name for p in app.iterdir() if p.is_dir() and (p / "mod.rs").exists()}
    modules = {p.stem for p in app.glob("*.rs")} - {"lib"}
    modules |= {f"{r}/" for r in rooms}
    modules |= {f"{r}/{p.stem}" for r in rooms for p in (app / r).glob("*.rs") if p.stem != "mod"}
    compare("app module shared/app/src/", modules, named["app"])
    # An HTTP function is one per operation of infra/openapi.yaml (its x-function): the
    # layout names the others, by trigger.
    functions = {
        p.parent.name
        for p in (ROOT / "functions").glob("*/Cargo.toml")
        if "bouquet_http::main!" not in (p.parent / "src/main.rs").read_text(encoding="utf-8")
    }
    compare("function functions/", functions, named["functions"])
    for name in sorted(named["localstack"]):
        if not (ROOT / "localstack" / name).exists():
            problems.append(f"docs/architecture.md layout: localstack/{name} is named but does not exist")


TEST_REFERENCE = re.compile(
    r"`((?:system|use_cases)/[\w/]+\.rs|shared/[\w/.-]+\.rs|localstack/[\w/.-]+\.rs)::(\w+)`"
)
BROWSER_TEST = re.compile(r"browser `(test_\w+)`")
TEST_DIRS = {
    "system/": "localstack/system-tests/tests/system/",
    "use_cases/": "shared/app/tests/use_cases/",
}


def check_test_references(problems):
    browser = (ROOT / "localstack/browser-tests/test_console.py").read_text(encoding="utf-8")
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for file, name in TEST_REFERENCE.findall(text):
            for short, long in TEST_DIRS.items():
                if file.startswith(short):
                    file = long + file[len(short):]
            source = ROOT / file
            if not source.exists():
                problems.append(f"{where}: names {file}, which does not exist")
            elif not re.search(rf"\b(?:fn|mod) {name}\b", source.read_text(encoding="utf-8")):
                problems.append(f"{where}: names {file}::{name}, which is no function there")
        for name in BROWSER_TEST.findall(text):
            if not re.search(rf"\bdef {name}\b", browser):
                problems.append(f"{where}: names browser test {name}, which does not exist")


def check_runtime_functions(problems):
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    listed = re.search(r"built on\s+`bouquet_runtime::main!`:([^(]*)\(checked by", text)
    named = set(re.split(r"[\s,]+", listed.group(1))) if listed else set()
    for main in sorted((ROOT / "functions").glob("*/src/main.rs")):
        name = main.parent.parent.name
        if "bouquet_runtime::main!" in main.read_text(encoding="utf-8") and name not in named:
            problems.append(
                "docs/architecture.md: the list of functions built on `bouquet_runtime::main!` "
                f"(\"built on `bouquet_runtime::main!`: ... (checked by\") does not name {name}"
            )


def main():
    problems = []
    check_links(problems)
    check_layout(problems)
    check_test_references(problems)
    check_runtime_functions(problems)
    for problem in problems:
        print(problem)
    files = len(list(markdown_files()))
    print(f"docs: {files} Markdown files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
