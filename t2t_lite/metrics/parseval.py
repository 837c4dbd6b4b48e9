"""Labelled bracket precision / recall / F1 with EVALB's COLLINS.prm conventions.

What EVALB (Sekine & Collins) does with COLLINS.prm, and so does this module:
  * words tagged with a DELETE_LABEL (-NONE- traces and the punctuation tags , : `` '' .) are
    removed before spans are computed, and a bracket left spanning no word is not counted;
  * labels are trimmed at the first "-" or "=" (NP-SBJ-1 -> NP), brackets labelled TOP are deleted;
  * ADVP and PRT are the same label (EQ_LABEL);
  * brackets are matched as a multiset of (label, start, end): unary chains count each level,
    preterminals (POS tags) are not brackets;
  * results for all sentences and for those of at most 40 words (CUTOFF_LEN), where the length
    counts every gold word but -NONE- (DELETE_LABEL_FOR_LENGTH).

Where this module differs, and why:
  * Punctuation is found by the *gold* tree's tags, and the test tree's words at those positions
    are removed too. EVALB uses each tree's own tags; the two agree whenever the test tree has the
    gold punctuation tags, the only case where EVALB scores the sentence at all. Parsers that do not
    predict tags (the XX placeholder) are thus scored as EVALB scores them with gold tags put back.
  * A root wrapper with no content ("( (S ...) )", TOP, ROOT) is removed on both sides (EVALB
    deletes TOP but would count PTB's empty-labelled wrapper as a matched bracket).
  * A test line that is not a tree is scored as a flat tree (one root bracket over the words), and a
    test tree whose words differ from the gold's scores no match with all its brackets counted;
    EVALB drops such sentences as errors ("Length unmatch", "Words unmatch"), which can only
    flatter a parser. Both are counted. Words that differ only by what each tree's own tags delete
    (a parse without the punctuation) are no difference, as in EVALB.
  * A gold line that is not a tree (unbalanced, empty, unknown format), or a tree of traces only,
    is skipped with its test line, and counted by reason. The test file may also leave such trees
    out (one line per scoreable gold tree, as the decoder writes for datagen's test .tsv).
"""
import collections
import dataclasses
import os

from t2t_lite.data import trees
from t2t_lite.errors import UserError
from t2t_lite.progress_line import counted



@dataclasses.dataclass(frozen=True)
class Params:
    """An EVALB parameter file's settings (DELETE_LABEL, DELETE_LABEL_FOR_LENGTH, EQ_LABEL,
    EQ_WORD, CUTOFF_LEN); LABELED is always 1."""

    delete_labels: frozenset
    delete_for_length: frozenset = frozenset({trees.TRACE_TAG})
    equal_labels: tuple = ()  # pairs
    equal_words: tuple = ()  # pairs
    cutoff_length: int = 40

    def label(self, label):
        """EVALB's modify_label (trim at the first - or =), then EQ_LABEL to one spelling."""
        for i, char in enumerate(label):
            if char in "-=":
                label = label[:i]
                break
        return dict((b, a) for a, b in self.equal_labels).get(label, label)

    def word(self, word):
        return dict((b, a) for a, b in self.equal_words).get(word, word)


# COLLINS.prm, the standard setting for the Penn Treebank.
COLLINS = Params(delete_labels=frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."}),
                 equal_labels=(("ADVP", "PRT"),))


def _leaves(tree):
    """(tag, word) of a tree's leaves under its wrapper, -NONE- traces left out: a trace is never
    a word (EVALB deletes it), and leaving it out lets an output without traces line up."""
    return [(tag, word) for tag, word in trees.strip_wrapper(tree).leaves()
            if tag != trees.TRACE_TAG]


def gold_layout(tree, params=COLLINS):
    """(keep flag per non-trace leaf, sentence length for the cutoff) of a gold tree."""
    leaves = _leaves(tree)
    length = sum(tag not in params.delete_for_length for tag, _ in leaves)
    return [tag not in params.delete_labels for tag, _ in leaves], length


def brackets(tree, keep, params=COLLINS):
    """Counter of (label, start, end) in kept-word positions; keep[i] is for non-trace leaf i."""
    found = collections.Counter()
    position = [0, 0]  # non-trace leaf index, kept-word index

    def walk(node):
        if node.is_preterminal():
            if node.label != trees.TRACE_TAG:
                position[1] += keep[position[0]]
                position[0] += 1
            return
        start = position[1]
        for child in node.children:
            walk(child)
        label = params.label(node.label)
        if position[1] > start and label not in params.delete_labels:
            found[(label, start, position[1])] += 1

    walk(trees.strip_wrapper(tree))
    return found


def _words(tree, params, keep=None):
    """The words of a tree's non-trace leaves (those kept, if keep is given), EQ_WORD applied."""
    leaves = _leaves(tree)
    keep = [True] * len(leaves) if keep is None else keep
    return [params.word(word) for (_, word), kept in zip(leaves, keep) if kept]


def keep_for_test(gold, test, params=COLLINS):
    """Keep flags for the test tree's non-trace leaves, or None when its words are not the gold's.

    Over the gold's very words, the gold's flags (its tags decide what is punctuation, so XX-tagged
    output is scored). Otherwise, as EVALB: each tree drops the words its own tags delete, and the
    sentence is scored if what is left is the same (a parse without the punctuation, say).
    """
    gold_keep, _ = gold_layout(gold, params)
    if _words(gold, params) == _words(test, params):
        return gold_keep
    test_keep = [tag not in params.delete_labels for tag, _ in _leaves(test)]
    if _words(gold, params, gold_keep) == _words(test, params, test_keep):
        return test_keep
    return None


@dataclasses.dataclass
class Counts:
    sentences: int = 0
    matched: int = 0
    gold: int = 0
    test: int = 0
    exact: int = 0

    def add(self, matched, gold, test):
        self.sentences += 1
        self.matched += matched
        self.gold += gold
        self.test += test
        self.exact += int(matched == gold == test)

    def scores(self):
        recall = 100.0 * self.matched / self.gold if self.gold else 0.0
        precision = 100.0 * self.matched / self.test if self.test else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        exact = 100.0 * self.exact / self.sentences if self.sentences else 0.0
        return {"recall": recall, "precision": precision, "f1": f1, "exact_match": exact,
                "sentences": self.sentences}


@dataclasses.dataclass
class Result:
    all: Counts = dataclasses.field(default_factory=Counts)
    short: Counts = dataclasses.field(default_factory=Counts)  # length <= params.cutoff_length
    gold_skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    test_flat: int = 0  # test lines that were no tree, scored as flat trees
    word_mismatch: int = 0  # test trees over other words than the gold's


def flat_tree(gold):
    """The gold's words under one root (trees.FALLBACK_ROOT): what an unusable output counts as."""
    return trees.Tree(trees.FALLBACK_ROOT, [trees.Tree(tag, [word]) for tag, word in _leaves(gold)])


def score_trees(gold, test, params=COLLINS):
    """(matched, gold brackets, test brackets) of one sentence.

    A test tree over other words than the gold's matches nothing; all its brackets count.
    """
    keep, _ = gold_layout(gold, params)
    gold_brackets = brackets(gold, keep, params)
    gold_count = sum(gold_brackets.values())
    test_keep = keep_for_test(gold, test, params)
    if test_keep is None:
        test_brackets = brackets(test, [True] * len(_leaves(test)), params)
        return 0, gold_count, sum(test_brackets.values())
    test_brackets = brackets(test, test_keep, params)
    return (sum((gold_brackets & test_brackets).values()), gold_count,
            sum(test_brackets.values()))


def gold_skip_reason(gold):
    """Why a gold item is no sentence to score (None if it is one): the TreeError's reason, or
    only_traces for a tree with no word but -NONE- (datagen skips both, so the decoder's input
    has no line for them; EVALB does not score them either)."""
    if isinstance(gold, trees.TreeError):
        return gold.reason
    return None if _leaves(gold) else "only_traces"


def evaluate(gold_items, test_items, params=COLLINS):
    """Pairs gold and test items (Tree, or TreeError for text that is no tree) -> Result.

    A test item paired with a skipped gold item is not looked at (it may be None).
    """
    result = Result()
    for gold, test in zip(gold_items, test_items):
        reason = gold_skip_reason(gold)
        if reason:
            result.gold_skipped[reason] += 1
            continue
        if isinstance(test, trees.TreeError):
            result.test_flat += 1
            test = flat_tree(gold)
        elif keep_for_test(gold, test, params) is None:
            result.word_mismatch += 1
        counts = score_trees(gold, test, params)
        result.all.add(*counts)
        if gold_layout(gold, params)[1] <= params.cutoff_length:
            result.short.add(*counts)
    return result


def evaluate_files(gold_path, test_path, params=COLLINS):
    """Scores a test file against a gold file, tree by tree in order.

    The gold may be .mrg-style (trees over several lines) or one tree per line; the test has one
    tree per line (as EVALB wants, and t2t-lite-decoder writes), so a line that is no tree stays
    in step with the gold and is scored flat. See `align_test_lines` for how they pair up.
    """
    for path in (gold_path, test_path):
        if os.path.isdir(path):
            raise UserError(f"{path} is a folder; name a file of trees")
        if not os.path.isfile(path):
            raise UserError(f"file not found: {path}")
    with open(test_path, encoding="utf-8", errors="replace") as f:
        test_items = [read_test_line(line) for line in f]
    with open(gold_path, encoding="utf-8", errors="replace") as f:
        gold_items = list(trees.read_trees(f))
    test_items = align_test_lines(gold_items, test_items, gold_path, test_path)
    return evaluate(gold_items, test_items, params)


def align_test_lines(gold_items, test_items, gold_path, test_path):
    """Test items in step with the gold items.

    The test has a line per gold tree, bad ones included (as EVALB pairs files), or a line per
    scoreable gold tree: datagen's test .tsv leaves bad trees out, so the decoder's output of it
    has no line for them, and those gold trees get None. Any other count is an error.
    """
    if len(test_items) == len(gold_items):
        return test_items
    scoreable = [gold_skip_reason(gold) is None for gold in gold_items]
    if len(test_items) != sum(scoreable):
        raise UserError(f"{gold_path} holds {len(gold_items)} trees ({sum(scoreable)} scoreable, "
                        f"the rest bad) but {test_path} has {counted(len(test_items), 'line')}; "
                        "the test needs one line per gold tree, or one per scoreable tree, in "
                        "order")
    lines = iter(test_items)
    return [next(lines) if ok else None for ok in scoreable]


def read_test_line(line):
    """One test line -> Tree, or the TreeError saying why it is none (then scored flat).

    Several trees on one line are read as EVALB reads them: their brackets, and no root.
    """
    try:
        return trees.parse(line)
    except trees.TreeError as error:
        if error.reason != "several_trees":
            return error
    try:
        return trees.parse(f"(TOP {line})")  # TOP: a deleted label, as in EVALB
    except trees.TreeError as error:
        return error


def format_result(result, params=COLLINS):
    lines = []
    for title, counts in (("all", result.all), (f"len<={params.cutoff_length}", result.short)):
        s = counts.scores()
        lines.append(f"{title:>8}: F1 {s['f1']:.2f}  precision {s['precision']:.2f}  recall "
                     f"{s['recall']:.2f}  exact {s['exact_match']:.2f}  sentences "
                     f"{s['sentences']}  brackets gold {counts.gold} test {counts.test} "
                     f"matched {counts.matched}")
    skipped = ", ".join(f"{k}={v}" for k, v in sorted(result.gold_skipped.items())) or "none"
    lines.append(f"gold trees skipped: {sum(result.gold_skipped.values())} ({skipped}); test "
                 f"lines scored flat: {result.test_flat}; test trees over other words: "
                 f"{result.word_mismatch}")
    return "\n".join(lines)
