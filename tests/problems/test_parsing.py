"""Parsing: tree reading and cleaning, linearise -> de-linearise round trips, bracket repair, the
parsing_wsj problems on a treebank laid out as the LDC ships it, and the decoder hook."""
import os

import pytest

from t2t_lite import exit_status, registry
from t2t_lite.data import text_io, trees
from t2t_lite.errors import UserError
from t2t_lite.inference import batch_decode
from t2t_lite.metrics import parseval
from t2t_lite.problems.parsing import ParsingProblem

PTB = """( (S 
    (NP-SBJ-1 (DT The) (NN cat) )
    (VP (VBD was) 
      (VP (VBN seen) 
        (NP (-NONE- *-1) )
        (PP-LOC (IN near) 
          (NP (DT the) (NN mat) ))))
    (. .) ))
"""
CLEAN = "(S (NP (DT The) (NN cat)) (VP (VBD was) (VP (VBN seen) (PP (IN near) (NP (DT the) (NN mat))))) (. .))"


def test_read_clean_linearise():
    (tree,) = trees.read_trees(PTB.splitlines(keepends=True))
    assert trees.to_bracketed(trees.clean(tree)) == CLEAN
    assert trees.linearise(trees.clean(tree)) == (
        "The cat was seen near the mat .",
        "(S (NP XX XX ) (VP XX (VP XX (PP XX (NP XX XX ) ) ) ) XX )")


@pytest.mark.parametrize("text", [
    CLEAN,
    "(S (NP (PRP I)) (VP (VBD saw) (NP (NP (DT the) (NN man)) (PP (IN with) (NP (DT a) "
    "(NN telescope))))) (. .))",
    "(FRAG (NP (NN Yes)))",  # a unary chain over one word
    "(S (S (NP (NNP A)) (VP (VBD won))) (, ,) (CC and) (S (NP (NNP B)) (VP (VBD lost))))",
    "(NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-))",
])
def test_round_trip(text):
    tree = trees.parse(text)
    source, target = trees.linearise(tree)
    rebuilt, repairs = trees.delinearise(target, source.split())
    assert repairs == []
    # The same brackets; tags become XX except unambiguous punctuation (for EVALB).
    expected = text
    for tag, word in tree.leaves():
        expected = expected.replace(f"({tag} {word})", f"({trees.guess_tag(word)} {word})")
    assert trees.to_bracketed(rebuilt) == expected


WORDS = "The cat sat on the mat .".split()


@pytest.mark.parametrize("output,expected,repairs", [
    # a closing bracket too many, and the rest left open
    ("(S (NP XX XX ) ) ) (VP XX (PP XX (NP XX XX XX",
     "(S (S (NP (XX The) (XX cat))) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat) (. .)))))",
     ["extra_close", "unclosed", "multiple_roots"]),
    # unclosed brackets are closed at the end
    ("(S (NP XX XX ) (VP XX (PP XX (NP XX XX ) ) ) XX",
     "(S (NP (XX The) (XX cat)) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat)))) (. .))",
     ["unclosed"]),
    # too few XX: the missing words join the root, at its end
    ("(S (NP XX XX ) (VP XX ) )",
     "(S (NP (XX The) (XX cat)) (VP (XX sat)) (XX on) (XX the) (XX mat) (. .))",
     ["missing_placeholder"]),
    # too many XX: the surplus is dropped, and the constituents it leaves empty
    ("(S (NP XX XX ) (VP XX (PP XX (NP XX XX ) ) ) XX (NP XX XX ) )",
     "(S (NP (XX The) (XX cat)) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat)))) (. .))",
     ["extra_placeholder", "empty_constituent"]),
    # several top-level constituents get a root
    ("(NP XX XX ) (VP XX (PP XX (NP XX XX ) ) XX )",
     "(S (NP (XX The) (XX cat)) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat))) (. .)))",
     ["multiple_roots"]),
    # nothing usable: a flat tree
    ("", "(S (XX The) (XX cat) (XX sat) (XX on) (XX the) (XX mat) (. .))", ["flat"]),
    (") ) XX ( hello", "(S (XX The) (XX cat) (XX sat) (XX on) (XX the) (XX mat) (. .))",
     ["extra_close", "stray_token", "flat"]),
    # Vinyals' labelled closing brackets are read too
    ("(S (NP XX XX )NP (VP XX (PP XX (NP XX XX )NP )PP )VP XX )S",
     "(S (NP (XX The) (XX cat)) (VP (XX sat) (PP (XX on) (NP (XX the) (XX mat)))) (. .))", []),
])
def test_repairs(output, expected, repairs):
    tree, done = trees.delinearise(output, WORDS)
    assert trees.to_bracketed(tree) == expected
    assert tree.words() == WORDS  # always every word, in order
    if repairs is not None:
        assert done == repairs


@pytest.mark.parametrize("text,reason", [
    ("(S (NP (DT a) (NN b))", "unbalanced"),
    ("(S (NP (DT a))))", "unbalanced"),
    ("()", "empty_tree"),
    ("(S (NP ) (VP (VB a)))", "empty_constituent"),
    ("the cat sat", "not_a_tree"),
    ("(S (DT a) word)", "malformed"),
    ("(S (DT a)) (S (DT b))", "several_trees"),
])
def test_bad_trees_name_their_reason(text, reason):
    with pytest.raises(trees.TreeError) as error:
        trees.parse(text)
    assert error.value.reason == reason


def test_tree_files_group_multi_line_trees_and_skip_bad_ones():
    lines = ["( (S (NP (DT a))\n", "   (VP (VB b))) )\n", "(S (NP (DT a)\n",  # unbalanced
             "\n", "(S (VP (VB c)))\n", "junk line\n", "((S (VP (VB d))))\n"]
    items = list(trees.read_trees(lines))
    assert [getattr(i, "reason", None) for i in items] == [None, "unbalanced", None,
                                                           "not_a_tree", None]
    assert [i.words() for i in items if isinstance(i, trees.Tree)] == [["a", "b"], ["c"], ["d"]]


def write_sections(root, trees_by_section):
    for section, texts in trees_by_section.items():
        folder = os.path.join(root, "parsed", "mrg", "wsj", f"{section:02d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"wsj_{section:02d}00.mrg"), "w") as f:
            f.write("\n".join(texts) + "\n")


def test_parsing_wsj_reads_the_ldc_layout_with_the_standard_split(tmp_path):
    sections = {s: [f"( (S (NP (NNP S{s})) (VP (VBD ran)) (. .)) )"] for s in range(0, 25)}
    sections[3].append("(S (NP (DT broken)")  # unbalanced: counted and skipped
    sections[4].append("( (S (NP-SBJ (-NONE- *)) ) )")  # only a trace
    write_sections(tmp_path / "ldc", sections)
    problem = registry.problem("parsing_wsj", raw_dir=str(tmp_path / "ldc"))
    train = list(problem.generate_samples("train", None))
    assert [s for s in train if not isinstance(s, text_io.Skipped)] == [
        (f"S{s} ran .", "(S (NP XX ) (VP XX ) XX )") for s in range(2, 22)]
    assert [s.reason for s in train if isinstance(s, text_io.Skipped)] == [
        "tree_unbalanced", "tree_only_traces"]
    assert list(problem.generate_samples("dev", None))[0][0] == "S22 ran ."
    assert list(problem.generate_samples("test", None))[0][0] == "S23 ran ."
    assert problem.vocab_size == 16000 and problem.dev_metric == "parseval"
    assert registry.problem("parsing_wsj_semi").vocab_size == 32000


def test_one_tree_per_line_files_and_the_silver_corpus(tmp_path):
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.trees").write_text(f"(TOP (S (NP (NN {split})) (VP (VBZ is))))\n")
    silver = tmp_path / "silver.txt"
    silver.write_text("(S (NP (NN silver)) (VP (VBZ helps)))\n(S (NP\n")
    problem = registry.problem("parsing_wsj_semi", raw_dir=str(tmp_path), silver=str(silver))
    train = list(problem.generate_samples("train", None))
    assert train[:2] == [("train is", "(S (NP XX ) (VP XX ) )"),
                         ("silver helps", "(S (NP XX ) (VP XX ) )")]
    assert isinstance(train[2], text_io.Skipped)
    assert [s for s, _ in problem.generate_samples("dev", None)] == ["dev is"]  # no silver


@pytest.mark.parametrize("params,message", [
    ({}, "parsing_wsj: no treebank given; pass --problem_param=raw_dir=DIR"),
    ({"raw_dir": "/nonexistent"}, "is not a folder"),
])
def test_missing_treebank_is_one_user_error(params, message):
    with pytest.raises(UserError, match=message):
        list(registry.problem("parsing_wsj", **params).generate_samples("train", None))


def test_missing_sections_and_silver_are_user_errors(tmp_path):
    write_sections(tmp_path, {2: ["(S (NN a))"]})
    with pytest.raises(UserError, match="sections 03, 04"):
        list(registry.problem("parsing_wsj", raw_dir=str(tmp_path)).generate_samples("train", None))
    with pytest.raises(UserError, match="needs a silver-tree corpus"):
        list(registry.problem("parsing_wsj_semi", raw_dir=str(tmp_path))
             .generate_samples("train", None))


@pytest.mark.slow
def test_datagen_cli_error_is_one_line(tmp_path):
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "t2t_lite.bin.datagen", "--problem=parsing_wsj",
                          f"--data_dir={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == exit_status.USER_ERROR and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("error: parsing_wsj: no treebank given")


def test_decoder_hook_writes_trees_and_translation_stays_unchanged():
    hook = batch_decode.output_postprocessor("parsing_wsj")
    assert hook("a b .", "(S (NP XX ) (VP XX XX )") == "(S (NP (XX a)) (VP (XX b) (. .)))"
    assert hook("", "(S XX )") == ""
    assert batch_decode.output_postprocessor("translate_ende_gettext")("x", "y z") == "y z"
    assert batch_decode.output_postprocessor(None)("x", "y") == "y"
    # a problem that cannot be built without parameters, or one not registered here
    assert batch_decode.output_postprocessor("translate_gettext")("x", "y") == "y"
    assert batch_decode.output_postprocessor("user_problem_not_imported")("x", "y") == "y"


@pytest.mark.parametrize("source,output", [
    ("f(x) = ( y )", "(S (NP XX XX ) (VP XX (NP XX ) XX ) )"),
    ("( ) (S", "(S XX XX XX )"),
    (") (", "garbage ( ) XX"),
])
def test_decoder_hook_spells_brackets_in_words_so_the_line_stays_one_tree(source, output):
    line = batch_decode.output_postprocessor("parsing_wsj")(source, output)
    # One well-formed tree over the source words, brackets spelt as the treebank does.
    assert trees.parse(line).words() == [trees.escape_brackets(w) for w in source.split()]
    assert trees.escape_brackets("f(x)") == "f-LRB-x-RRB-"


def test_readme_recipe_pairs_decoder_output_with_a_test_section_holding_bad_trees(tmp_path):
    """cut -f1 D/parsing_wsj-test.tsv | decoder > parsed; parseval --gold=<cat R/23/*.mrg>: the
    .tsv leaves bad trees out, so parseval pairs the lines with the scoreable gold trees."""
    good = ["( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat)) (. .)) )",
            "( (S (NP-SBJ (PRP It)) (VP (VBD ran) (NP (-NONE- *T*-1))) (. .)) )"]
    sections = {s: good for s in range(2, 23)}
    sections[23] = [good[0], "( (S (NP (DT broken) )", "( (S (NP-SBJ (-NONE- *)) ) )", good[1]]
    write_sections(tmp_path, sections)
    problem = registry.problem("parsing_wsj", raw_dir=str(tmp_path))
    test = [s for s in problem.generate_samples("test", None) if not isinstance(s, text_io.Skipped)]
    parsed = tmp_path / "wsj23.parsed"  # a perfect parser's output, through the decoder's hook
    parsed.write_text("".join(ParsingProblem.postprocess_output(source, target) + "\n"
                              for source, target in test))
    gold = tmp_path / "parsed" / "mrg" / "wsj" / "23" / "wsj_2300.mrg"
    result = parseval.evaluate_files(str(gold), str(parsed))
    assert dict(result.gold_skipped) == {"unbalanced": 1, "only_traces": 1}
    assert result.all.sentences == 2 and result.all.scores()["f1"] == 100.0
