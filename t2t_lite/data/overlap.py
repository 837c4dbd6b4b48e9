"""Held-out leak checks: does a dev/test source occur in train up to case, punctuation,
whitespace and placeholders?

Software messages come in near-duplicates ("Failed to copy notes from '%s' to '%s'" and "failed
to copy notes from %s to %s"); a split that hashes the raw text puts such variants on both sides
and the test score then measures memory, not translation. Problems split on `normalize(source)`,
and datagen measures what remains with `heldout_overlap`.
"""
import re
import unicodedata

# printf (%s, %1$d, %-5.2f, %(name)s), Python/ICU braces ({0}, {name}, {}), Qt (%1), shell ($VAR).
_PLACEHOLDER = re.compile(
    r"%(?:\(\w+\)|\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlLqjzt]*[diouxXeEfFgGcsSpn]"
    r"|%\d+|\{[^{}\s]*\}|\$\{?\w+\}?")
_NOT_WORD = re.compile(r"[\W_]+")


def normalize(text):
    """The text as a leak check sees it: placeholders, punctuation and case gone, one space."""
    text = unicodedata.normalize("NFKC", text)
    text = _PLACEHOLDER.sub(" ", text)
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def heldout_overlap(train_sources, heldout_sources):
    """{split: (leaked, total)}: how many held-out sources have a normalised twin in train.

    `heldout_sources` maps a split to its source strings; `train_sources` is streamed once, so
    memory holds only the (small) held-out sets.
    """
    wanted = {split: [normalize(s) for s in sources] for split, sources in heldout_sources.items()}
    lookup = set().union(*wanted.values()) if wanted else set()
    found = set()
    for source in train_sources:
        key = normalize(source)
        if key in lookup:
            found.add(key)
    return {split: (sum(key in found for key in keys), len(keys)) for split, keys in wanted.items()}
