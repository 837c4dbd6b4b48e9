"""Labelled bracket scoring against EVALB's published behaviour.

EVALB ships sample/sample.{gld,tst,prm} with its output sample.rsl; the per-sentence (matched, gold,
test) bracket counts and the totals below are copied from that published sample.rsl. The other
cases are worked by hand under COLLINS.prm.
"""
import subprocess
import sys

import pytest

from t2t_lite import exit_status
from t2t_lite.data import trees
from t2t_lite.metrics import parseval

GOLD = "(S (A (P this)) (B (Q is) (A (R a) (T test))))"
LONG = "(S " + " ".join(["(A (P this)) (B (Q is) (A (R a) (T test)))"] * 11) + ")"
# (gold, test, EVALB's (matched, gold, test) from sample.rsl) for its valid sentences.
SAMPLE = [
    (GOLD, GOLD, (4, 4, 4)),
    (GOLD, "(S (A (P this)) (B (Q is) (C (R a) (T test))))", (3, 4, 4)),
    (GOLD, "(S (A (P this)) (B (Q is) (A (R a) (U test))))", (4, 4, 4)),  # tags are not scored
    (GOLD, "(S (C (P this)) (B (Q is) (A (R a) (U test))))", (3, 4, 4)),
    (GOLD, "(S (A (P this)) (B (Q is) (R a) (A (T test))))", (3, 4, 4)),
    (GOLD, "(S (A (P this) (Q is)) (A (R a) (T test)))", (2, 4, 3)),
    (GOLD, "(S (P this) (Q is) (R a) (T test))", (1, 4, 1)),
    (GOLD, "(P this) (Q is) (R a) (T test)", (0, 4, 0)),  # several trees: no root bracket
    (GOLD, "(S (A (P this)) (B (Q is) (A (A (R a) (T test)))))", (4, 4, 5)),  # unary counts
    (GOLD, "(S (A (P this)) (B (Q is) (A (A (A (A (A (R a) (T test))))))))", (4, 4, 8)),
    (GOLD, "(TOP (S (A (P this)) (B (Q is) (A (R a) (T test)))))", (4, 4, 4)),  # TOP deleted
    (GOLD, "(S (A (P this)) (B (Q is) (A (R a) (TT test))))", (4, 4, 4)),
    (GOLD, "(S (A (P This)) (B (Q is) (A (R a) (T test))))", (4, 4, 4)),  # EQ_WORD This this
    ("(S (A-SBJ-1 (P this)) (B-WHATEVER (Q is) (A (R a) (T test))))", GOLD, (4, 4, 4)),
    (LONG, LONG, (34, 34, 34)),  # 44 words: outside len<=40
    (GOLD[:-1] + " (-NONE- *))", GOLD[:-1] + " (-NONE- *))", (4, 4, 4)),
    (GOLD[:-1] + " (: *))", GOLD[:-1] + " (: *))", (4, 4, 4)),  # ":" deleted; length 5
]
SAMPLE_PRM = parseval.Params(delete_labels=frozenset({"TOP", "-NONE-", ",", ":", "``", "''"}),
                             equal_labels=(("T", "TT"),), equal_words=(("This", "this"),))


def counts(gold, test, params=parseval.COLLINS):
    return parseval.score_trees(trees.parse(gold), parseval.read_test_line(test), params)


@pytest.mark.parametrize("gold,test,expected", SAMPLE)
def test_evalb_sample_sentences(gold, test, expected):
    assert counts(gold, test, SAMPLE_PRM) == expected


def test_evalb_sample_totals():
    result = parseval.evaluate([trees.parse(g) for g, _, _ in SAMPLE],
                               [parseval.read_test_line(t) for _, t, _ in SAMPLE], SAMPLE_PRM)
    full, short = result.all.scores(), result.short.scores()
    # sample.rsl: All 17 valid, recall 87.76, precision 90.53, complete match 52.94;
    # len<=40: 16 valid, recall 81.25, precision 85.25, complete match 50.00.
    assert (full["sentences"], round(full["recall"], 2), round(full["precision"], 2),
            round(full["exact_match"], 2)) == (17, 87.76, 90.53, 52.94)
    assert (short["sentences"], round(short["recall"], 2), round(short["precision"], 2),
            round(short["exact_match"], 2)) == (16, 81.25, 85.25, 50.00)


PTB_GOLD = """( (S (NP-SBJ-1 (DT The) (NN cat))
    (VP (VBD did) (RB n't)
      (VP (VB come) (PRT (RP back)) (S (NP-SBJ (-NONE- *-1)))))
    (, ,) (`` ``) (ADVP (RB alas)) ('' '') (. .)) )"""


def test_collins_conventions_by_hand():
    gold = trees.parse(" ".join(PTB_GOLD.split()))
    # Gold brackets over the 7 kept words (The cat did n't come back alas; punctuation and the
    # trace deleted): S 0-7, NP 0-2, VP 2-6, VP 4-6, ADVP(PRT) 5-6, ADVP 6-7; the S and NP over
    # only a trace span nothing and are not counted, nor is the wrapper. 6 in all.
    assert sorted(parseval.brackets(gold, parseval.gold_layout(gold)[0])) == [
        ("ADVP", 5, 6), ("ADVP", 6, 7), ("NP", 0, 2), ("S", 0, 7), ("VP", 2, 6), ("VP", 4, 6)]
    assert parseval.gold_layout(gold)[1] == 11  # punctuation counts for the length, traces not
    # A parse over the same words (XX tags, as the decoder writes them), with ADVP for PRT, the
    # commas and quotes attached elsewhere (ignored), and the VP 2-6 wrongly ending at 5:
    test = ("(S (NP (XX The) (XX cat)) (VP (XX did) (XX n't) (VP (XX come) (ADVP (XX back)))) "
            "(XX ,) (XX ``) (PP (XX alas)) (XX '') (XX .))")
    # test brackets: S 0-7, NP 0-2, VP 2-6 (",", "``" excluded), VP 4-6, ADVP 5-6, PP 6-7 = 6;
    # matched: all but PP 6-7 = 5. P = R = 5/6.
    assert counts(PTB_GOLD, test) == (5, 6, 6)
    result = parseval.evaluate([gold], [parseval.read_test_line(test)])
    assert round(result.all.scores()["f1"], 2) == 83.33


def test_root_and_function_tags():
    gold = "(TOP (S-TPC (NP (NN it)) (VP (VBZ works)) (. .)))"
    assert counts(gold, "(S (NP (XX it)) (VP (XX works)) (. .))") == (3, 3, 3)
    assert counts(gold, "(ROOT (S (NP (XX it)) (VP (XX works)) (. .)))") == (3, 3, 3)
    assert counts(gold, "( (FRAG (NP (XX it)) (VP (XX works)) (. .)) )") == (2, 3, 3)


def test_unparseable_output_is_scored_flat_and_other_words_match_nothing():
    gold = [trees.parse("(S (NP (DT a) (NN b)) (VP (VB c)))")] * 3
    test = [parseval.read_test_line(line) for line in
            ("(S (NP (XX a) (XX b) (VP (XX c))", "", "(S (NP (XX a) (XX x)) (VP (XX c)))")]
    result = parseval.evaluate(gold, test)
    assert result.test_flat == 2 and result.word_mismatch == 1
    # flat: S 0-3 matches, gold NP and VP missed; other words: 3 test brackets, 0 matched.
    assert (result.all.matched, result.all.gold, result.all.test) == (2, 9, 5)
    assert result.all.sentences == 3


def test_bad_gold_trees_are_counted_and_skipped(tmp_path):
    gold = tmp_path / "gold.mrg"
    gold.write_text("( (S (NP (DT a)) (VP (VB b))) )\n(S (NP (DT a)\n(S (VP (VB c)))\n()\n"
                    "not a tree\n( (S (NP (DT d))\n    (VP (VB e))) )\n")
    test = tmp_path / "test.txt"
    test.write_text("(S (NP (XX a)) (VP (XX b)))\n(S (XX a))\n(S (VP (XX c)))\n\n\n"
                    "(S (NP (XX d)) (VP (XX e)))\n")
    result = parseval.evaluate_files(str(gold), str(test))
    assert dict(result.gold_skipped) == {"unbalanced": 1, "empty_tree": 1, "not_a_tree": 1}
    assert result.all.sentences == 3 and result.all.matched == result.all.gold == 8


@pytest.mark.slow
def test_cli(tmp_path):
    gold, test = tmp_path / "gold.txt", tmp_path / "test.txt"
    gold.write_text("(S (NP (DT a) (NN b)) (VP (VB c)))\n")
    test.write_text("(S (NP (XX a)) (VP (XX b) (XX c)))\n")
    run = subprocess.run([sys.executable, "-m", "t2t_lite.bin.parseval", f"--gold={gold}",
                          f"--test={test}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "F1 33.33" in run.stdout  # S matches; NP 0-1 and VP 1-3 do not: 1/3 each way
    run = subprocess.run([sys.executable, "-m", "t2t_lite.bin.parseval", f"--gold={gold}",
                          f"--test={tmp_path / 'missing.txt'}"], capture_output=True, text=True,
                         timeout=120)
    assert (run.returncode == exit_status.USER_ERROR
            and run.stderr.strip().startswith("error: file not found"))
    run = subprocess.run([sys.executable, "-m", "t2t_lite.bin.parseval", f"--gold={gold}",
                          f"--test={tmp_path}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == exit_status.USER_ERROR
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path} is a folder; name a file of trees")


@pytest.mark.parametrize("gold,test,expected", [
    # EVALB deletes each tree's own punctuation before comparing words: a parse without the
    # punctuation is the same sentence, scored in full.
    ("(S (NP (PRP he)) (VP (VBD ran)) (. .))", "(S (NP (XX he)) (VP (XX ran)))", (3, 3, 3)),
    ("(S (NP (PRP he)) (PRN (, ,)) (VP (VBD ran)))", "(S (NP (XX he)) (VP (XX ran)))", (3, 3, 3)),
    # ... and so is one with punctuation the gold lacks, if it is tagged as punctuation.
    ("(S (NP (PRP he)) (VP (VBD ran)))", "(S (NP (XX he)) (VP (XX ran) (. .)))", (3, 3, 3)),
    # Other words (EVALB's "Length unmatch" / "Words unmatch"): no match, every bracket counted.
    ("(S (NP (PRP he)) (VP (VBD ran)))", "(S (NP (XX he)) (VP (XX ran) (XX away)))", (0, 3, 3)),
    ("(S (NP (PRP he)) (VP (VBD ran)))", "(S (NP (XX she)) (VP (XX ran)))", (0, 3, 3)),
])
def test_word_differences_follow_evalb(gold, test, expected):
    assert counts(gold, test) == expected
    result = parseval.evaluate([trees.parse(gold)], [parseval.read_test_line(test)])
    assert result.word_mismatch == (expected[0] == 0)


def test_test_file_may_leave_out_bad_gold_trees(tmp_path):
    gold = tmp_path / "gold.mrg"
    gold.write_text("( (S (NP (DT a)) (VP (VB b))) )\n(S (NP (DT a)\n"
                    "( (S (NP-SBJ (-NONE- *)) ) )\n(S (VP (VB c)))\n")
    test = tmp_path / "test.txt"
    test.write_text("(S (NP (XX a)) (VP (XX b)))\n(S (VP (XX c)))\n")  # the 2 scoreable trees
    result = parseval.evaluate_files(str(gold), str(test))
    assert dict(result.gold_skipped) == {"unbalanced": 1, "only_traces": 1}
    assert (result.all.sentences, result.all.matched, result.all.gold) == (2, 5, 5)
    test.write_text("(S (NP (XX a)) (VP (XX b)))\n")  # neither count: an error naming both
    with pytest.raises(parseval.UserError, match="4 trees [(]2 scoreable.* has 1 line;"):
        parseval.evaluate_files(str(gold), str(test))
