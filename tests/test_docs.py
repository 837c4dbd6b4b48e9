"""The docs agree with the code: README.md, docs/*.md and bench/*.md show only flags the tools
define, name only tools that exist, and link only to files (and headings) that exist.

Commands are read from fenced code blocks, indented code lines and inline code spans. In each, a
`t2t-lite-<tool>` owns the `--flag`s that follow it up to the next tool, `;`, `&&`, a `#` comment
or the end of the (backslash-joined) line. A tool's flags are what its module defines on import
(t2t_lite.bin.<tool>, found through setup.py's console scripts; t2t_lite.cli adds the shared ones)
plus absl's own (--verbosity, --helpfull, ...): one short subprocess per tool, run side by side,
since absl's flag registry is global and two tools define the same names.
"""
import ast
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "bench").glob("*.md"))]

TOOL = re.compile(r"t2t-lite-[a-z0-9]+(?:-[a-z0-9]+)*")
FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w]*)")
SEGMENT_END = re.compile(r"\s#|;|&&")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")

# Runs in a fresh interpreter: import the tool's module (its flags are defined at import, the
# shared ones through t2t_lite.cli), add absl's help flags, print {name: is_boolean}.
LIST_FLAGS = r"""
import importlib, json, sys
from absl import app, flags
importlib.import_module(sys.argv[1])
app.define_help_flags()
print(json.dumps({name: bool(flags.FLAGS[name].boolean) for name in flags.FLAGS}))
"""


def console_scripts():
    """{'t2t-lite-decoder': 't2t_lite.bin.decoder', ...} from setup.py."""
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    scripts = dict(re.findall(r"[\"'](t2t-lite-[a-z0-9-]+)\s*=\s*([\w.]+):\w+[\"']", text))
    assert scripts, "no t2t-lite-* console scripts found in setup.py"
    return scripts


@pytest.fixture(scope="module")
def tool_flags():
    """{tool: {flag name: is_boolean}} for every console script, collected in parallel."""
    processes = {
        tool: subprocess.Popen([sys.executable, "-c", LIST_FLAGS, module], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tool, module in console_scripts().items()}
    flags = {}
    for tool, process in processes.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, f"{tool}: listing its flags failed:\n{err[-2000:]}"
        flags[tool] = json.loads(out.strip().splitlines()[-1])
    return flags


def code_snippets(text):
    """(line number, code) for fenced blocks, indented code lines and inline code spans; a
    command continued with a trailing backslash comes back as one logical line."""
    snippets, in_fence = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or line.startswith(("    ", "\t")):
            snippets.append((number, line))
        else:
            snippets.extend((number, match.group(2)) for match in INLINE_CODE.finditer(line))
    joined = []
    for number, code in snippets:
        if joined and joined[-1][1].rstrip().endswith("\\") and number == joined[-1][2] + 1:
            start, previous, _ = joined[-1]
            joined[-1] = (start, previous.rstrip()[:-1] + " " + code, number)
        else:
            joined.append((number, code, number))
    return [(number, code) for number, code, _ in joined]


def tool_commands(text):
    """(line number, tool, [flag names]) for every t2t-lite-<tool> in the page's code."""
    commands = []
    for number, code in code_snippets(text):
        matches = list(TOOL.finditer(code))
        for i, match in enumerate(matches):
            stop = matches[i + 1].start() if i + 1 < len(matches) else len(code)
            segment = code[match.end():stop]
            end = SEGMENT_END.search(segment)
            if end:
                segment = segment[:end.start()]
            commands.append((number, match.group(0), FLAG.findall(segment)))
    return commands


def outside_fences(text):
    """The page's lines with fenced blocks (fences included) blanked, so line numbers hold."""
    kept, in_fence = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            kept.append("")
            continue
        kept.append("" if in_fence else line)
    return kept


def prose(text):
    """The page without fenced blocks and inline code, where links are links."""
    return [INLINE_CODE.sub("", line) for line in outside_fences(text)]


def relative_links(text):
    """(line number, target) of every link that is not a URL or an anchor on the same page."""
    links = []
    for number, line in enumerate(prose(text), 1):
        targets = [m.group(1) for m in LINK.finditer(line)]
        reference = REFERENCE_LINK.match(line)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if re.match(r"[a-zA-Z][\w+.-]*:", target) or target.startswith("#"):
                continue  # http:, https:, mailto:, ... or an anchor on this page
            links.append((number, target))
    return links


def test_pages_exist():
    assert (ROOT / "README.md").exists()
    assert any(page.parent.name == "docs" for page in PAGES), "docs/*.md pages are missing"


def test_every_tool_flag_in_the_docs_is_defined(tool_flags):
    problems, checked = [], 0
    for page in PAGES:
        name = page.relative_to(ROOT)
        for number, tool, flag_names in tool_commands(page.read_text(encoding="utf-8")):
            if tool not in tool_flags:
                problems.append(f"{name}:{number}: {tool} is not a console script in setup.py")
                continue
            defined = tool_flags[tool]
            for flag in flag_names:
                checked += 1
                negated = flag[2:] if flag.startswith("no") else None
                if flag not in defined and not (negated and defined.get(negated)):
                    problems.append(f"{name}:{number}: {tool} has no --{flag}")
    assert not problems, "\n".join(problems)
    assert checked > 50, f"only {checked} flags found: is the parser still reading the docs?"


def test_every_tool_is_shown_in_the_docs(tool_flags):
    shown = {tool for page in PAGES
             for _, tool, _ in tool_commands(page.read_text(encoding="utf-8"))}
    missing = set(tool_flags) - shown
    assert not missing, f"tools with no command in the docs: {sorted(missing)}"


def anchors(text):
    """The heading anchors GitHub makes for a Markdown page: lower case, markup and punctuation
    dropped, spaces as hyphens, repeated anchors numbered -1, -2, ..."""
    found, seen = set(), {}
    for line in outside_fences(text):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_every_relative_link_resolves():
    """Relative links point at existing files; an anchor into a Markdown page names a heading."""
    problems, checked = [], 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        links = relative_links(text)
        links += [(number, target) for number, line in enumerate(prose(text), 1)
                  for target in (m.group(1) for m in LINK.finditer(line)) if target.startswith("#")]
        for number, target in links:
            checked += 1
            path, _, anchor = target.partition("#")
            path = path.split("?", 1)[0]
            resolved = page if not path else (
                ROOT / path.lstrip("/") if path.startswith("/") else page.parent / path)
            if not resolved.exists():
                problems.append(f"{page.relative_to(ROOT)}:{number}: link to {target} "
                                "(no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(
                    resolved.read_text(encoding="utf-8")):
                problems.append(f"{page.relative_to(ROOT)}:{number}: link to {target} "
                                f"(no heading #{anchor} in {resolved.relative_to(ROOT)})")
    assert not problems, "\n".join(problems)
    assert checked > 5, f"only {checked} links found: is the parser still reading them?"


def test_the_parsers_see_what_they_should():
    """The extraction itself, on a known page: a continued command, a comment, inline code, a
    negated boolean, a link in code (ignored) and in prose (kept)."""
    page = "\n".join([
        "Run `t2t-lite-bleu --translation=a --reference=b` and see [data](docs/data.md).",
        "",
        "    t2t-lite-trainer --problem=P \\",
        "        --model_dir=M   # --not_a_flag",
        "",
        "```bash",
        "t2t-lite-decoder --noprint_scores < in > out; t2t-lite-exporter --format=ctranslate2",
        "x = [1](2)",
        "```",
    ])
    assert tool_commands(page) == [
        (1, "t2t-lite-bleu", ["translation", "reference"]),
        (3, "t2t-lite-trainer", ["problem", "model_dir"]),
        (7, "t2t-lite-decoder", ["noprint_scores"]),
        (7, "t2t-lite-exporter", ["format"]),
    ]
    assert relative_links(page) == [(1, "docs/data.md")]
    assert anchors("# Decoding, exporting\n## Export: `--format=x`\n## Export: `--format=x`") == {
        "decoding-exporting", "export---formatx", "export---formatx-1"}


def test_the_architecture_page_names_every_top_level_module_and_package():
    package = ROOT / "t2t_lite"
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
    names += [f"{p.name}/" for p in package.iterdir()
              if p.is_dir() and (p / "__init__.py").exists()]
    missing = [name for name in sorted(names)
               if not re.search(rf"(?<![\w/]){re.escape(name.rstrip('/'))}\b", page)]
    assert not missing, f"docs/architecture.md does not name {missing}"


# An index line of a package's __init__ docstring: four spaces, the module's name, two or more
# spaces, what it does (t2t_lite/inference/__init__.py); or a bullet, `- name: what it does`.
INDEX_LINE = re.compile(r"^(?: {4}(\w+)(?: {2,}\S| *$)|- (\w+): )", re.MULTILINE)
PY_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*\w+\.py)\b")
DOTTED = re.compile(r"\bt2t_lite(?:\.\w+)+")


def package_index(init):
    """The module names an __init__.py's docstring lists (INDEX_LINE), as written."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
        return []
    return [indented or bullet for indented, bullet in INDEX_LINE.findall(body[0].value.value)]


def package_modules(package):
    return ({p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
            | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()})


def source_files():
    return {p.relative_to(ROOT).as_posix() for folder in ("t2t_lite", "tests", "bench")
            for p in (ROOT / folder).rglob("*.py")}


def names_a_file(name, files):
    """Whether `name` (a path as a page writes it: from the repository, from t2t_lite/, or a bare
    file name within a package's paragraph) is a file of the tree."""
    if name in files or f"t2t_lite/{name}" in files:
        return True
    return any(f.endswith(f"/{name}") for f in files)


def test_every_package_index_names_its_modules_and_only_those():
    wrong = {}
    for init in sorted((ROOT / "t2t_lite").rglob("__init__.py")):
        listed = package_index(init)
        if not listed:
            continue  # a package without an index
        modules = package_modules(init.parent)
        missing, unlisted = sorted(set(listed) - modules), sorted(modules - set(listed))
        if missing or unlisted:
            wrong[init.relative_to(ROOT).as_posix()] = {"gone": missing, "unlisted": unlisted}
    assert not wrong, f"package indexes out of date: {wrong}"


def test_every_file_and_module_the_architecture_page_names_exists():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    files = source_files()
    gone = [name for name in PY_PATH.findall(page) if not names_a_file(name, files)]
    for dotted in DOTTED.findall(page):
        parts = dotted.split(".")
        if not any(ROOT.joinpath(*parts[:i]).with_suffix(".py").is_file()
                   or (ROOT.joinpath(*parts[:i]) / "__init__.py").is_file()
                   for i in range(2, len(parts) + 1)):
            gone.append(dotted)
    assert not gone, f"docs/architecture.md names what does not exist: {gone}"


def test_every_test_file_the_code_cites_exists():
    files = source_files()
    gone = [(path, name) for path in sorted(files) if path.startswith("t2t_lite/")
            for name in re.findall(r"\btests/[\w/]+\.py\b",
                                   (ROOT / path).read_text(encoding="utf-8"))
            if name not in files]
    assert not gone, f"docstrings cite test files that do not exist: {gone}"


def test_the_index_parser_sees_what_it_should(tmp_path):
    init = tmp_path / "__init__.py"
    init.write_text('"""Doc.\n\n    alpha   does a\n    beta_2  b\n    not an index line\n'
                    '    gamma\n- delta: d\n  - not: one\n- a bullet without a name\n"""\n')
    assert package_index(init) == ["alpha", "beta_2", "gamma", "delta"]
    assert PY_PATH.findall("translator.py (x), model_dir/limits.py; a.pyc, x/y.py.") == [
        "translator.py", "model_dir/limits.py", "x/y.py"]
