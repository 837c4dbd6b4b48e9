"""docs/reference.md is what t2t_lite/reference.py generates from the code, and the figures the
hand-written pages quote for the sets agree with the sets."""
import dataclasses
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from t2t_lite import config, exit_status, hparams, reference

ROOT = pathlib.Path(__file__).resolve().parent.parent
HAND_WRITTEN = [ROOT / "README.md",
                *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "reference.md")]


@pytest.fixture(scope="module")
def sets():
    return reference.resolved_sets()


def test_the_committed_page_is_what_the_code_generates():
    committed = (ROOT / reference.PAGE).read_text(encoding="utf-8")
    generated = reference.render()
    if committed != generated:
        old, new = committed.splitlines(), generated.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old),
                                                                                  len(new)))
        pytest.fail(f"{reference.PAGE} differs from the code from line {first + 1} "
                    f"(page: {old[first:first + 1]}, code: {new[first:first + 1]}); "
                    f"regenerate it with `{reference.COMMAND}` and commit it")


def test_every_setting_parameter_and_flag_has_a_meaning():
    missing = [f"{cls.__name__}.{f.name}" for cls in reference.CONFIGS
               for f in dataclasses.fields(cls) if not reference.field_meanings(cls).get(f.name)]
    from t2t_lite import registry
    missing += [f"{name}: {param}" for name in registry.list_problems()
                for param, _, meaning in reference.problem_params(registry.problem_class(name))
                if not meaning]
    assert not missing, ("no meaning in the code for: " + ", ".join(missing) + " (a comment "
                         "on the field in config.py; an Args entry in the constructor's docstring)")


def test_meanings_are_read_from_comments_and_docstrings(tmp_path, monkeypatch):
    (tmp_path / "ref_probe_module.py").write_text(textwrap.dedent('''
        import dataclasses

        @dataclasses.dataclass
        class Probe:
            """Probe."""

            plain: int = 1  # on its line
            # above, first line,
            # second line
            above: int = 2
            both: int = 3  # the line's own comment wins  # even with a '#' in it
            bare: int = 4

            def method(self):  # not a field
                pass


        def documented(a, b, c):
            """Summary.

            Args (a note):
              a: first,
                continued.
              b: second.

            Returns:
              c: not an argument.
            """
        '''), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import ref_probe_module

    assert reference.field_meanings(ref_probe_module.Probe) == {
        "plain": "on its line", "above": "above, first line, second line",
        "both": "the line's own comment wins  # even with a '#' in it", "bare": ""}
    assert reference.docstring_args(ref_probe_module.documented) == {
        "a": "first, continued.", "b": "second."}


def test_changed_by_names_each_set_that_changes_a_value(sets):
    changes = dict(reference.changed_by(sets, config.TrainConfig, "keep_checkpoints"))
    for name, (parent, values) in sets.items():
        value = values["TrainConfig"].keep_checkpoints
        before = (sets[parent][1]["TrainConfig"].keep_checkpoints if parent
                  else config.TrainConfig.keep_checkpoints)  # the field's default
        assert (name in changes) == (value != before), name
    assert changes["small"] == hparams.load("small")[1].keep_checkpoints != 20
    assert "big" not in changes  # big includes base and keeps its value


# ----------------------------------------------------------------------------- figures

# What the hand-written pages say about a set, as (regex, field, how to read the number). Only
# phrases that name a setting unambiguously: a measurement's "beam 4" elsewhere is not a claim.
PHRASES = [
    (r"\bN=(\d+)\b", "num_layers", int),
    (r"\b(\d+)(?:\+\d+)?[ -]layers?\b", "num_layers", int),
    (r"\bd_model[ =](\d+)\b", "d_model", int),
    (r"\bd_ff[ =](\d+)\b", "d_ff", int),
    (r"\bh[ =](\d+)\b", "num_heads", int),
    (r"\b(\d+) heads\b", "num_heads", int),
    (r"\bP_drop[ =]([\d.]*\d)", "dropout", float),
    (r"\beps_ls[ =]([\d.]*\d)", "label_smoothing", float),
    (r"\blabel smoothing ([\d.]*\d)", "label_smoothing", float),
    (r"\bwarmup (\d+)\b(?!%)", "warmup_steps", int),
    (r"\b(\d+)k steps\b", "train_steps", lambda s: int(s) * 1000),
    (r"\bcheckpoint every (\d+) minutes\b", "checkpoint_minutes", float),
    (r"\baverage(?:s|d)? (?:the )?last (\d+)\b", "average_last", int),
    (r"\bkeep(?:s|ing)? (?:the last )?(\d+) checkpoints\b", "keep_checkpoints", int),
    (r"\b([\d,]+)-token batches\b", "batch_tokens", lambda s: int(s.replace(",", ""))),
    (r"~(\d+)k tokens/step\b", "batch_tokens", lambda s: int(s) * 1000),
    (r"\bbeam (\d+)\b", "beam_size", int),
    (r"\balpha ([\d.]*\d)", "alpha", float),
    (r"\binput(?: length)? \+ (\d+)\b", "extra_length", int),
    (r"\bprecision `(\w+)`", "mixed_precision", str),
]
# "`keep_checkpoints` (20; 10 in `small`)": a field's value in base, and in the sets named.
FIELD_IN_PARENS = re.compile(r"`(?:\w+\.)?(\w+)` \(([^()]*(?:\([^()]*\)[^()]*)*)\)")
SET_SENTENCE = re.compile(r"\b[Tt]he `([\w/]+)` set\b([^.]*(?:\.\d[^.]*)*)")
# The sets a user picks; tiny (for tests) and the table3/ rows are left to the reference page.
MAIN_SETS = ("base", "base_prenorm", "big", "big_enfr", "parsing", "small", "small_cpu")


def value_in_sets(sets):
    """ "N in `small`/`small_cpu`", "5 in base, 20 in big": a figure and the known sets it is
    given for, backquoted or not (longest names first, so `small_cpu` is not read as `small`)."""
    name = "|".join(re.escape(n) for n in sorted(sets, key=len, reverse=True))
    one = rf"`?(?:{name})`?(?![\w/])"
    return re.compile(rf"([\d.]*\d%?) in ({one}(?:(?:/|, | and | or ){one})*)")


def _field(name):
    for cls in reference.CONFIGS:
        if name in {f.name for f in dataclasses.fields(cls)}:
            return cls.__name__
    return None


def _value(sets, set_name, field):
    return getattr(sets[set_name][1][_field(field)], field)


def logical_lines(text):
    """(first line number, text) of each table row, heading, list item or paragraph, with its
    wrapped lines joined: a sentence or parenthesis may span lines."""
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        starts = (not items or not stripped or not items[-1][1]
                  or stripped.startswith(("|", "#", "```", "- ", "* ", "+ "))
                  or re.match(r"\d+\. ", stripped) or items[-1][1].startswith(("|", "#")))
        if starts:
            items.append((number, stripped))
        else:
            items[-1] = (items[-1][0], items[-1][1] + " " + stripped)
    return [item for item in items if item[1]]


def figure_claims(text, sets):
    """(line number, set, field, value stated, where) for each figure a page states about a set:
    in a table row whose first cell names the set, in a sentence "The `set` set ...", and in a
    parenthesis after a field's name, "`field` (base's value; N in `set`/`set`)"."""
    claims = []
    for number, line in logical_lines(text):
        contexts = []
        row = re.match(r"\s*\|\s*`([\w/]+)`\s*\|(.*)", line)
        if row and row.group(1) in sets:
            contexts.append((row.group(1), row.group(2)))
        contexts += [(m.group(1), m.group(2)) for m in SET_SENTENCE.finditer(line)
                     if m.group(1) in sets]
        for set_name, span in contexts:
            for pattern, field, read in PHRASES:
                for match in re.finditer(pattern, span):
                    claims.append((number, set_name, field, read(match.group(1)), match.group(0)))
        for match in FIELD_IN_PARENS.finditer(line):
            field, inside = match.group(1), match.group(2)
            kind = _field(field)
            first = re.match(r"\s*([\d.]*\d%?)(?![\w.])", inside)
            if kind is None or not first:
                continue
            kind_of = type(getattr(getattr(config, kind), field))  # the default's type

            def read(figure):  # "5%" is 0.05
                return (kind_of(float(figure[:-1]) / 100) if figure.endswith("%")
                        else kind_of(figure))

            named = {"base": read(first.group(1))}
            for value, names in value_in_sets(sets).findall(inside):
                named.update({name: read(value) for name in re.findall(r"[\w/]+", names)
                              if name in sets})
            # A set not named has the figure of the nearest set it derives from that is: a
            # figure for base alone says every set keeps it.
            for set_name in MAIN_SETS:
                ancestor = set_name
                while ancestor not in named:
                    ancestor = sets[ancestor][0]
                named.setdefault(set_name, named[ancestor])
            for set_name, value in named.items():
                claims.append((number, set_name, field, value, match.group(0)))
    return claims


def disagreements(text, sets, page="page"):
    return [f"{page}:{number}: {where!r} says {field} = {stated!r} for `{set_name}`, "
            f"which sets {_value(sets, set_name, field)!r} (see docs/reference.md)"
            for number, set_name, field, stated, where in figure_claims(text, sets)
            if set_name in sets and _value(sets, set_name, field) != stated]


def test_the_figures_the_pages_quote_agree_with_the_sets(sets):
    problems, checked = [], 0
    for page in HAND_WRITTEN:
        text = page.read_text(encoding="utf-8")
        checked += len(figure_claims(text, sets))
        problems += disagreements(text, sets, page.relative_to(ROOT))
    assert not problems, "\n".join(problems)
    assert checked >= 20, f"only {checked} figures found: is the parser still reading the pages?"


def test_the_figure_check_catches_a_wrong_or_partial_figure(sets):
    wrong = ("- checkpoints every `checkpoint_minutes` (10), keeping the last "
             "`keep_checkpoints` (20).")
    found = disagreements(wrong, sets)
    assert any("keep_checkpoints = 20 for `small`" in line for line in found), found
    assert any("checkpoint_minutes = 10.0 for `small`" in line for line in found), found
    partial = "- `keep_checkpoints` (20; 10 in `small`)."  # small_cpu derives from small
    assert [line.split(" for ")[1].split(",")[0] for line in disagreements(partial, sets)] == [
        "`small_cpu`"]
    right = ("- `checkpoint_minutes` (10; 2 in `small`/`small_cpu`), "
             "`TrainConfig.keep_checkpoints` (20 in `base` and `small_cpu`, 10 in `small`); "
             "`average_last` (5 in base, 20 in big, 1 in the Table 3 rows).")
    assert disagreements(right, sets) == []
    assert len(figure_claims(right, sets)) == 3 * len(MAIN_SETS)
    table = "| `big` | d_model=1024, d_ff=4096, h=16, P_drop=0.1, 300k steps, average last 20 |"
    assert disagreements(table, sets) == [
        "page:1: 'P_drop=0.1' says dropout = 0.1 for `big`, which sets 0.3 (see "
        "docs/reference.md)"]
    sentence = "The `parsing` set decodes with beam 21, alpha 0.6, max length input + 300."
    assert [line.split(" says ")[1].split(" for")[0] for line in disagreements(sentence, sets)] \
        == ["alpha = 0.6"]


# ----------------------------------------------------------------------------- viz extra


@pytest.mark.slow
def test_attention_plot_without_matplotlib_says_which_extra_to_install(tmp_path):
    """The real CLI entry, with matplotlib made unimportable: one error line, no traceback."""
    code = ("import sys; sys.modules['matplotlib'] = None; "
            "sys.argv = ['t2t-lite-attention-plot', '--model_dir=M', '--source=a b', "
            "'--output_dir=plots']; "
            "from t2t_lite.bin.attention_plot import run; run()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert lines[-1].startswith("error: ") and "t2t_lite[viz]" in lines[-1], lines
    extras = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert re.search(r'"viz": \["matplotlib==[\d.]+"\]', extras), "setup.py lost the viz extra"
    assert not (tmp_path / "plots").exists()


@pytest.mark.slow
def test_the_page_ignores_the_callers_gin_bindings_and_registered_problems():
    """A session's own gin bindings and test problems neither reach the page nor are undone."""
    import gin

    from t2t_lite import registry
    from t2t_lite.data.translation import TranslationProblem

    committed = (ROOT / reference.PAGE).read_text(encoding="utf-8")
    registry.register_problem("reference_probe_problem")(type("Probe", (TranslationProblem,), {}))
    gin.clear_config()
    gin.parse_config("TrainConfig.keep_checkpoints = 7")
    try:
        assert "reference_probe_problem" in registry.list_problems()
        assert reference.render() == committed
        assert config.TrainConfig().keep_checkpoints == 7
    finally:
        gin.clear_config()
        registry._PROBLEMS.pop("reference_probe_problem", None)
