"""Constituency trees: read Penn Treebank brackets, clean, linearise for seq2seq, and back.

    (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))
      source: "The cat sat ."
      target: "(S (NP XX XX ) (VP XX ) XX )"

The target is Vinyals, Kaiser et al. (2015)'s bracket sequence with every word (and its POS tag)
replaced by the placeholder XX, in its short form: an opening token carries the label ("(NP"), a
closing bracket is a bare ")" (the paper's ")NP" adds a token per constituent and no information).
POS tags are not predicted, as in that paper; EVALB does not score them.

`delinearise` turns any model output back into a tree over the source words, repairing what a
decoder can get wrong: closing brackets with nothing open are dropped, unclosed ones are closed,
empty constituents are removed, surplus XX are dropped, missing words are attached to the root, and
text with no usable bracket becomes a flat tree. It never fails, so every input line yields a tree
(`parse_output` spells brackets inside words -LRB- / -RRB-, so the line stays one tree).
"""
import re

PLACEHOLDER = "XX"
# Root wrappers without linguistic content: PTB's "( (S ...) )", and TOP / ROOT from other tools.
WRAPPER_LABELS = ("", "TOP", "ROOT")
# Label of the root a repair has to invent (flat trees, several top-level constituents).
FALLBACK_ROOT = "S"
TRACE_TAG = "-NONE-"
# Word forms whose PTB tag is one of EVALB's deleted punctuation tags, and unambiguously so
# (a lone "'" may be '' or POS, "`" rarely occurs): the decoder writes these tags instead of XX
# so that the output is also scoreable by EVALB itself, which deletes punctuation by tag.
PUNCTUATION_TAGS = {",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":",
                    "...": ":", "``": "``", "''": "''"}


class TreeError(ValueError):
    """Text that is not one well-formed tree; `reason` is a short snake_case tag for counts."""

    def __init__(self, reason, detail=""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class Tree:
    """A constituent: a label and children, each a Tree or (for a preterminal) one word str."""

    __slots__ = ("label", "children")

    def __init__(self, label, children):
        self.label, self.children = label, list(children)

    def is_preterminal(self):
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self):
        """(tag, word) of every preterminal, in order."""
        if self.is_preterminal():
            return [(self.label, self.children[0])]
        return [leaf for child in self.children for leaf in child.leaves()]

    def words(self):
        return [word for _, word in self.leaves()]

    def __eq__(self, other):
        return (isinstance(other, Tree) and self.label == other.label
                and self.children == other.children)

    def __repr__(self):
        return f"Tree({to_bracketed(self)!r})"


_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse(text):
    """One bracketed tree -> Tree. Raises TreeError on anything else.

    Accepts "(S (NP (DT a) ...))" and PTB's "( (S ...) )"; labels may be empty (the wrapper).
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise TreeError("empty_tree")
    if tokens[0] != "(":
        raise TreeError("not_a_tree", text[:40])
    stack, tree = [], None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "(":
            if tree is not None:
                raise TreeError("several_trees", text[:40])
            label = ""
            if i + 1 < len(tokens) and tokens[i + 1] not in "()":
                label, i = tokens[i + 1], i + 1
            stack.append(Tree(label, []))
        elif token == ")":
            if not stack:
                raise TreeError("unbalanced", "too many ')'")
            node = stack.pop()
            if not node.children:
                raise TreeError("empty_tree" if not stack and tree is None else "empty_constituent")
            if stack:
                stack[-1].children.append(node)
            else:
                tree = node
        else:
            if not stack:
                raise TreeError("several_trees" if tree is not None else "not_a_tree", token)
            parent = stack[-1]
            if parent.children:  # a word must be the only child of its tag
                raise TreeError("malformed", f"word {token!r} beside constituents")
            parent.children.append(token)
            if i + 1 >= len(tokens) or tokens[i + 1] != ")":
                raise TreeError("malformed", f"word {token!r} not closed")
        i += 1
    if stack:
        raise TreeError("unbalanced", "too many '('")
    return tree


def to_bracketed(tree):
    """Tree -> "(S (NP (DT The) (NN cat)) ...)" on one line."""
    if tree.is_preterminal():
        return f"({tree.label} {tree.children[0]})"
    inner = " ".join(to_bracketed(child) for child in tree.children)
    return f"({tree.label} {inner})" if tree.label else f"( {inner})"


def strip_wrapper(tree):
    """The tree under a content-free root wrapper ("", TOP, ROOT with one constituent child)."""
    while (tree.label in WRAPPER_LABELS and len(tree.children) == 1
           and isinstance(tree.children[0], Tree) and not tree.is_preterminal()):
        tree = tree.children[0]
    return tree


def base_label(label):
    """NP-SBJ-1 -> NP, NP=2 -> NP, PP-LOC-CLR -> PP; -NONE-, -LRB- stay (as EVALB's trimming)."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def clean(tree):
    """The standard preprocessing: root wrapper removed, -NONE- traces and the constituents left
    empty by their removal deleted, function tags and co-indices stripped. None if nothing is left.
    """

    def walk(node):
        if node.is_preterminal():
            return None if node.label == TRACE_TAG else Tree(node.label, node.children)
        children = [c for c in (walk(child) for child in node.children) if c is not None]
        return Tree(base_label(node.label), children) if children else None

    return walk(strip_wrapper(tree))


def linearise(tree):
    """A cleaned tree -> (source words, target bracket sequence), both space-separated strings."""
    tokens = []

    def walk(node):
        if node.is_preterminal():
            tokens.append(PLACEHOLDER)
            return
        tokens.append("(" + node.label)
        for child in node.children:
            walk(child)
        tokens.append(")")

    walk(tree)
    return " ".join(tree.words()), " ".join(tokens)


def guess_tag(word):
    """The tag written for a word in decoded trees: its punctuation tag if unambiguous, else XX."""
    return PUNCTUATION_TAGS.get(word, PLACEHOLDER)


def delinearise(output, words):
    """A (possibly broken) target sequence and the source words -> (Tree, [repair tags]).

    The tree has exactly len(words) leaves, the words in order, tagged by `guess_tag`.
    Repairs (each named once per kind in the returned list, in order of first use):
    extra_close, unclosed, stray_token, empty_constituent, extra_placeholder,
    loose_placeholder, missing_placeholder, multiple_roots, flat.
    """
    repairs = []

    def note(kind):
        if kind not in repairs:
            repairs.append(kind)

    root = _read_brackets(output, note)
    missing = _keep_placeholders(root, len(words), note)
    tree = _one_root(root, note)
    if missing > 0:
        # Missing words go to the end of the root: in the PTB the last word is most often the
        # final punctuation, a child of the root.
        if any(isinstance(child, Tree) for child in root.children):
            note("missing_placeholder")
        tree.children.extend([PLACEHOLDER] * missing)
    return _attach_words(tree, iter(words)), repairs


def _read_brackets(output, note):
    """The output's brackets and placeholders under a virtual root (label None) that collects
    whatever ends up at the top level; closes nothing that is not open, leaves unclosed ones."""
    root = Tree(None, [])
    stack = [root]
    for token in output.split():
        if token.startswith("("):
            label = token[1:]
            if not label or "(" in label or ")" in label:
                note("stray_token")
                continue
            node = Tree(label, [])
            stack[-1].children.append(node)
            stack.append(node)
        elif token.startswith(")"):  # ")" or Vinyals' labelled ")NP"
            if len(stack) == 1:
                note("extra_close")
                continue
            stack.pop()
        elif token == PLACEHOLDER:
            stack[-1].children.append(PLACEHOLDER)
        else:
            note("stray_token")
    if len(stack) > 1:
        note("unclosed")
    return root


def _keep_placeholders(node, budget, note):
    """Keeps the first `budget` placeholders under `node` (in order), drops the surplus and the
    constituents left empty; returns how many of the budget are left (words still missing)."""
    kept = []
    for child in node.children:
        if isinstance(child, str):
            if budget > 0:
                budget -= 1
                kept.append(child)
            else:
                note("extra_placeholder")
        else:
            budget = _keep_placeholders(child, budget, note)
            if child.children:
                kept.append(child)
            else:
                note("empty_constituent")
    node.children = kept
    return budget


def _one_root(root, note):
    """The tree under the virtual root: its one constituent, or a FALLBACK_ROOT over all."""
    tops = [c for c in root.children if isinstance(c, Tree)]
    if not tops:
        note("flat")
        return Tree(FALLBACK_ROOT, root.children)  # placeholders only, if any
    if len(tops) == 1:
        # Placeholders beside the one root belong to it (a bracket closed too early).
        tree, at = tops[0], root.children.index(tops[0])
        if len(root.children) > 1:
            note("loose_placeholder")
            tree.children = root.children[:at] + tree.children + root.children[at + 1:]
        return tree
    note("multiple_roots")
    return Tree(FALLBACK_ROOT, root.children)


def _attach_words(node, words):
    """A copy of `node` with each placeholder replaced by the next of `words` under its tag."""
    children = []
    for child in node.children:
        if isinstance(child, str):
            word = next(words)
            children.append(Tree(guess_tag(word), [word]))
        else:
            children.append(_attach_words(child, words))
    return Tree(node.label, children)


# The PTB's spelling of brackets inside words: a raw "(" would end the tree text early.
BRACKET_ESCAPES = (("(", "-LRB-"), (")", "-RRB-"))


def escape_brackets(word):
    """ "(" -> "-LRB-", ")" -> "-RRB-" inside a word, as the treebank writes them."""
    for bracket, escaped in BRACKET_ESCAPES:
        word = word.replace(bracket, escaped)
    return word


def parse_output(output, source):
    """Decoder output + source line -> one-line bracketed tree (the parsing problems' hook).

    The tree's words are the source's, with brackets spelt -LRB- / -RRB- so that the line is
    always one well-formed tree (treebank text already spells them so).
    """
    words = [escape_brackets(word) for word in source.split()]
    if not words:
        return ""
    tree, _ = delinearise(output, words)
    return to_bracketed(tree)


def iter_tree_texts(lines):
    """Groups lines into tree texts: trees may span lines (.mrg files) or sit one per line.

    Yields (text, None) per candidate tree, or (None, reason) for input that is no tree. A new
    tree starts at a line beginning with "(" in column 0 (as in .mrg files) or whenever the
    brackets of the previous one balance; a tree still open at such a line is "unbalanced".
    """
    chunk, depth = [], 0
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if chunk and line.startswith("(") and depth > 0:
            yield None, "unbalanced"
            chunk, depth = [], 0
        if not chunk and not stripped.startswith("("):
            yield None, "not_a_tree"
            continue
        chunk.append(stripped)
        depth += stripped.count("(") - stripped.count(")")
        if depth <= 0:
            yield " ".join(chunk), None
            chunk, depth = [], 0
    if chunk:
        yield None, "unbalanced"


def read_trees(lines):
    """Lines of bracketed trees -> Tree, or TreeError for each tree text that does not parse."""
    for text, reason in iter_tree_texts(lines):
        if reason:
            yield TreeError(reason)
            continue
        try:
            yield parse(text)
        except TreeError as error:
            yield error
