"""Every measured figure on README.md and docs/*.md comes from one record in docs/records/.

A record is a small JSON file per measurement (docs/records/README.md): the command, the date,
the CPU class, the commit and the values. A page cites a record with a Markdown link to its file,
e.g. `[record](records/demo-20min-avx512bf16-2026-12-04.json)` (README: `docs/records/...`).

What counts as a figure: a number next to one of the words below, outside code (fenced or
indented blocks and inline code spans hold commands, flags and sample output, not figures):
- a number before "BLEU", "step(s)", "-step", "tokens/s", "tok/s", "lines/s", "sentences/s",
  "min", "minute(s)", "s a step" or "s/step", with at most a few words between them
  ("3,629 target tokens/s", "117.0 / 100.1 lines/s", "1 h 56 min", "the 300-step model");
- a number after "BLEU" ("test BLEU 50.10", "BLEU of 23.35", "BLEU 46.90 -> 47.07");
- every number in a table cell whose column header names one of those words, any rate ("/s")
  or "time" ("test BLEU", "steps", "lines/s", "time"), except the paper's own columns.
A chain of numbers joined by "-", "/", "->", "to" or "against" counts as one figure of several
numbers ("71-103 lines/s", "23.35 to 23.17").

Where a figure may stand: in a unit (a table row; else a paragraph, a list item or a heading),
and
- the unit cites records (a table row also takes the citations of its header and of the
  paragraph just above the table, when it has none of its own), and one of them holds each of
  the figure's numbers among its values, to the precision the page quotes (97 and 96.88 both
  quote 96.8812);
- that record's date and CPU class are written in the unit (a table row: in the row, its header
  or that paragraph).
A list item takes the citations (when it has none of its own), the date and the class of the
paragraph that leads into its list, or of the paragraph above a table that the list follows.
Exemptions are explicit: ALLOWED below, each a page, a pattern and a reason; a figure inside a
match of its page's pattern is not a measurement. An entry that exempts nothing fails too.
reference.md is generated from the code (settings, defaults, flag help) and is not read.
"""
import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORDS = ROOT / "docs" / "records"
NOT_READ = {"docs/reference.md": "generated from the code: settings, defaults and flag help"}
PAGES = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
         if p.relative_to(ROOT).as_posix() not in NOT_READ]
CLASSES = ("AVX-512/BF16", "AVX-512/AMX", "AVX2")
FIELDS = {"id", "what", "command", "date", "cpu_class", "commit", "commit_is", "values"}

# (page, pattern, reason): a figure inside a match of the pattern on that page is exempt.
ALLOWED = [
    # The paper's own numbers and its recipes (DESIGN.md's table), not measurements here.
    ("docs/training.md", r"~25k tokens/step, 100k steps, a checkpoint every 10 minutes",
     "the paper's base recipe (DESIGN.md)"),
    ("docs/training.md", r"P_drop=0\.3, 300k steps", "the paper's big recipe (DESIGN.md)"),
    ("docs/own-data.md", r"100k steps, ~25k tokens a batch|300k steps",
     "the paper's base and big schedules (DESIGN.md)"),
    ("docs/design.md", r"after 100,000 steps", "the paper's base schedule (DESIGN.md)"),
    ("docs/table3.md", r"100K steps", "the paper's schedule"),
    ("docs/table3.md", r"1\.0 BLEU at the paper's base 25\.8", "the paper's Table 3 base BLEU"),
    # Settings and user-chosen budgets: what the user asks for, not what a run measured.
    ("README.md", r"for 20 minutes|in the 20 minutes|--train_minutes=20", "the demo's budget"),
    ("docs/training.md", r"checkpoint every 10 minutes|warmup 4000|every 10 min\w*",
     "settings of the sets"),
    ("docs/training.md", r"after 12 steps|first 12 steps|\(0\.5 BLEU/F1\)",
     "the budget planner's and the averager's settings"),
    ("docs/training.md", r"400-step cap under 60 minutes evaluates as a 400-step run|e\.g\. for a 1,600-step",
     "examples of a rule and of a tool's output, not measurements"),
    ("docs/training.md", r"2 min on AWS spot", "the cloud provider's documented notice"),
    ("docs/decoding.md", r"1,048,576 beam steps per line|cannot decode 65,536 steps|× 64 beam steps",
     "limits the decoder enforces (model_dir/limits.py, inference/batching.py)"),
    ("docs/table3.md", r"and 10 minutes\s+of base|a checkpoint every 2 minutes",
     "t2t-lite-table3's defaults at --scale=cpu"),
    ("docs/table3.md", r"translate_ende_gettext, 300 steps per row",
     "a heading naming the budget its command sets (--train_steps=300)"),
]

NUM = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:[kK]\b)?"
JOIN = r"\s*(?:-|–|/|->|→|to|against)\s*"
CHAIN = rf"(?:{NUM})(?:{JOIN}(?:{NUM}))*"
UNIT_WORD = (r"(?:sacre)?BLEU|steps?\b|tokens/s|tok/s|lines/s|sentences/s|minutes?\b|min\b"
             r"|s a step|s/step")
BETWEEN = r"(?:target|source|output|real|training|test|dev|beam|more|fewer|evaluated|sacre)"
BEFORE = re.compile(rf"(?<![\w.,/-])({CHAIN})(?:\*\*)?(?:-| (?:{BETWEEN} ){{0,2}})(?:{UNIT_WORD})")
AFTER = re.compile(rf"BLEU(?: \w+)?(?: of| from| at)?:? (?:\*\*)?({CHAIN})")
# Columns of the paper's own numbers (Table 3's "paper BLEU") are not measurements here.
PAPER_COLUMN = re.compile(r"paper\b", re.I)
HEADER_WORD = re.compile(r"BLEU|steps?\b|/s\b|\btime\b|minutes?\b|\bmin\b", re.I)
NUMBER = re.compile(NUM)
LINK = re.compile(r"\]\((?:\.\./)?(?:docs/)?records/([\w.-]+\.json)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+\.)\s")


def load_records():
    return {path.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(RECORDS.glob("*.json"))}


def values_of(tree):
    """Every number in a record's values, however nested."""
    if isinstance(tree, bool):
        return []
    if isinstance(tree, (int, float)):
        return [float(tree)]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, list):
        return [v for item in tree for v in values_of(item)]
    return []


def numbers(text):
    """The numbers quoted in a span, as written ('3,159', '7.0')."""
    return NUMBER.findall(text)


def holds(values, quoted):
    """A value holds a quoted number when it rounds to it at the quoted precision: a record keeps
    96.8812, a page may quote 96.88 or 97."""
    scale = 1000 if quoted[-1] in "kK" else 1
    quoted = quoted.rstrip("kK")
    half_unit = 0.5 * 10 ** -len(quoted.partition(".")[2]) * scale
    number = float(quoted.replace(",", "")) * scale
    return any(abs(v - number) <= half_unit + 1e-9 for v in values)


def prose_lines(text):
    """The page's lines with fenced and indented code blocks blanked."""
    out, fenced, previous_blank, in_code = [], False, True, False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            previous_blank = False
            continue
        indented = line.startswith("    ") and line.strip()
        if fenced or (indented and (previous_blank or in_code)):
            in_code = True
            out.append("")
            continue
        in_code = False if line.strip() else in_code
        previous_blank = not line.strip()
        out.append(line)
    return out


def units(lines):
    """(kind, text, context, line number): a table row, with its header and the paragraph (or
    list item) above the table; a list item, with the paragraph that leads into its list (or, for a list right
    after a table, that table's paragraph); else a paragraph or a heading alone."""
    result, paragraph, start, table = [], [], 0, None
    last_block, above, lead, in_list = "", "", "", False

    def close():
        nonlocal paragraph, last_block, above, lead, in_list
        if paragraph:
            text = without_code(" ".join(s.strip() for s in paragraph))
            above = "" if text.startswith("#") else text
            if LIST_ITEM.match(paragraph[0]):
                if not in_list:
                    lead, in_list = last_block, True
                result.append(("item", text, {"header": "", "caption": lead}, start))
            else:
                in_list = False
                result.append(("prose", text, {"header": "", "caption": ""}, start))
                last_block = "" if text.startswith("#") else text
            paragraph = []

    for number, line in enumerate(lines, 1):
        stripped = without_code(line.strip())
        if stripped.startswith("|"):
            close()
            in_list = False
            if table is None:
                table = {"header": stripped, "caption": above, "columns": split_row(stripped)}
            elif not re.fullmatch(r"\|?[\s:|-]+\|?", stripped):
                result.append(("row", stripped, table, number))
            continue
        if table is not None:
            last_block = table["caption"]
        table = None
        if not stripped:
            close()
            continue
        if stripped.startswith("#") or LIST_ITEM.match(line):
            close()
        if not paragraph:
            start = number
        paragraph.append(line)
        if stripped.startswith("#"):
            close()
    close()
    return result


def without_code(text):
    """Inline code spans (commands, flags, sample output) blanked, offsets kept."""
    return INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)


def split_row(row):
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def figures(kind, text, table):
    """[(span text, [numbers], start offset)] found in one unit."""
    found = {}
    for pattern in (BEFORE, AFTER):
        for match in pattern.finditer(text):
            found[match.start(1)] = (match.group(1), numbers(match.group(1)), match.start(1))
    if kind == "row":
        offset = 0
        cells = split_row(text)
        for column, cell in zip(table["columns"], cells):
            position = text.index(cell, offset) if cell else offset
            offset = position + len(cell)
            if HEADER_WORD.search(column) and not PAPER_COLUMN.match(column):
                for match in NUMBER.finditer(cell):
                    if any(start <= position + match.start() < start + len(span)
                           for span, _, start in found.values()):
                        continue
                    found[position + match.start()] = (match.group(0), numbers(match.group(0)),
                                                       position + match.start())
    return sorted(found.values(), key=lambda f: f[2])


def scan(page, records):
    """Problems on one page, and the ALLOWED entries that matched there."""
    name = page.relative_to(ROOT).as_posix()
    problems, used = [], set()
    for kind, text, table, line in units(prose_lines(page.read_text(encoding="utf-8"))):
        context = " ".join([text, table["header"], table["caption"]])
        cited = LINK.findall(text) or LINK.findall(table["header"] + " " + table["caption"])
        allowed = [(index, match.start(), match.end())
                   for index, (allowed_page, pattern, _) in enumerate(ALLOWED) if allowed_page == name
                   for match in re.finditer(pattern, text)]
        for span, values, start in figures(kind, text, table):
            exempt = {index for index, a, b in allowed if a <= start < b}
            if exempt:
                used |= exempt
                continue
            where = f"{name}:{line}: {span!r} in {text[:100]!r}"
            missing = [n for n in values if not holds(values_in(cited, records), n)]
            if not cited:
                problems.append(f"{where}: cites no record")
                continue
            if missing:
                problems.append(f"{where}: {', '.join(missing)} in none of {cited}")
                continue
            holders = [records[c] for c in cited if c in records
                       and all(holds(values_of(records[c]["values"]), n) for n in values)]
            if not any(r["date"] in context and r["cpu_class"] in context for r in holders):
                problems.append(f"{where}: the record's date and class are not written with it "
                                f"({[(r['date'], r['cpu_class']) for r in holders]})")
    return problems, used


def values_in(cited, records):
    return [v for c in cited if c in records for v in values_of(records[c]["values"])]


def test_records_are_well_formed():
    records = load_records()
    assert records, "docs/records/ holds no record"
    bad = []
    for name, record in records.items():
        if not FIELDS <= set(record):
            bad.append(f"{name}: lacks {sorted(FIELDS - set(record))}")
            continue
        if record["id"] + ".json" != name:
            bad.append(f"{name}: id {record['id']!r} is not the file's name")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"]):
            bad.append(f"{name}: date {record['date']!r} is not YYYY-MM-DD")
        if record["cpu_class"] not in CLASSES:
            bad.append(f"{name}: cpu_class {record['cpu_class']!r} is not one of {CLASSES}")
        if not re.fullmatch(r"[0-9a-f]{7,40}", record["commit"]):
            bad.append(f"{name}: commit {record['commit']!r} is not a commit id")
        if record["commit_is"] not in ("measured", "published"):
            bad.append(f"{name}: commit_is must be 'measured' or 'published'")
        if not values_of(record["values"]):
            bad.append(f"{name}: no numeric values")
    assert not bad, "\n".join(bad)


def test_record_commits_exist():
    """Each record's commit is one of this repository's (where the checkout has its history)."""
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT,
                             capture_output=True, text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("not a git checkout with its whole history")
    commits = {name: record["commit"] for name, record in load_records().items()}
    answer = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, capture_output=True,
                            text=True, input="".join(f"{c}^{{commit}}\n" for c in commits.values()))
    if answer.returncode != 0:
        pytest.skip(f"git cat-file failed: {answer.stderr.strip()}")
    missing = [f"{name}: {commit}" for (name, commit), line
               in zip(commits.items(), answer.stdout.splitlines()) if line.endswith("missing")]
    assert not missing, "records naming commits this repository lacks:\n" + "\n".join(missing)


def test_citations_name_existing_records():
    records = load_records()
    missing = [f"{page.relative_to(ROOT)}: records/{name}"
               for page in PAGES for name in LINK.findall(page.read_text(encoding="utf-8"))
               if name not in records]
    assert not missing, "cited records that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_figure_comes_from_a_cited_record(page):
    problems, _ = scan(page, load_records())
    assert not problems, (f"{len(problems)} figure(s) without their record (cite one, with its "
                          "date and class; or add an ALLOWED entry with a reason):\n"
                          + "\n".join(problems))


def test_every_exemption_is_used():
    records, used = load_records(), set()
    for page in PAGES:
        used |= scan(page, records)[1]
    stale = [f"{page}: {pattern!r} ({reason})"
             for index, (page, pattern, reason) in enumerate(ALLOWED) if index not in used]
    assert not stale, "ALLOWED entries that match nothing any more:\n" + "\n".join(stale)


def test_the_scanner_finds_figures():
    """The rules above, on made-up text: what is a figure and what is not."""
    def found(text):
        return [span for span, _, _ in figures("prose", text, None)]
    assert found("made 731 steps and scored test BLEU 37.65") == ["731", "37.65"]
    assert found("the 300-step model, 3,629 target tokens/s") == ["300", "3,629"]
    assert found("at 71-103 lines/s; 117.0 / 100.1 lines/s") == ["71-103", "117.0 / 100.1"]
    assert found("sacreBLEU moves from 23.35 to 23.17 in 1 h 56 min") == ["23.35 to 23.17", "56"]
    assert found("beam 4, alpha 0.6, 13a, d_model 256") == []
    page = "text\n\n    t2t-lite-demo --train_minutes=20\n\n`20 minutes` x, 3 GiB a step\n"
    assert [figures(k, text, table) for k, text, table, _ in units(prose_lines(page))] == [[], []]
    page = "Runs (AVX2, 2026-12-03, [r](records/x.json)):\n\n- 731 steps\n- 37.65 BLEU\n\nlater\n"
    assert [(k, t["caption"][:4]) for k, _, t, _ in units(prose_lines(page))] == [
        ("prose", ""), ("item", "Runs"), ("item", "Runs"), ("prose", "")]
    assert holds([96.8812, 6.99], "97") and holds([6.99], "7.0") and not holds([6.99], "7.1")
    assert found("the paper's 100k steps") == ["100k"] and holds([100000], "100k")
