"""The gettext dev/test split: no case/punctuation/placeholder variant of a held-out source in
train, and the same split on every run."""
import glob

import pytest

from t2t_lite.data import overlap, text_io
from t2t_lite.problems import gettext


@pytest.mark.parametrize("a, b", [
    ("Failed to copy notes from '%s' to '%s'", "failed to copy notes from %s to %s"),
    ("Open File…", "open file"),
    ("Cannot open %1$s at %2$d.", "Cannot open %s at %d"),
    ("Delete {name}?", "Delete %(name)s"),
    ("Remove  $FILE  now!", "remove %1 now"),
])
def test_variants_normalise_alike_and_share_a_split(a, b):
    assert overlap.normalize(a) == overlap.normalize(b)
    assert gettext.split_of(a) == gettext.split_of(b)


def test_different_messages_stay_different():
    assert overlap.normalize("Open file") != overlap.normalize("Open files")


def test_heldout_overlap_counts_twins():
    counts = overlap.heldout_overlap(iter(["Save the file.", "Quit"]),
                                     {"test": ["save the FILE", "Print"], "dev": []})
    assert counts == {"test": (1, 2), "dev": (0, 0)}


needs_catalogs = pytest.mark.skipif(not glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"),
                                    reason="no German gettext catalogs on this machine")


@pytest.mark.slow
@needs_catalogs
def test_real_catalogs_have_no_normalised_test_source_in_train_and_a_stable_split():
    problem = gettext.TranslateEndeGettext()

    def split(name):
        return [pair for pair in problem.generate_samples(name, None)
                if not isinstance(pair, text_io.Skipped)]

    train, dev, test = split("train"), split("dev"), split("test")
    train_keys = {overlap.normalize(source) for source, _ in train}
    for heldout in (dev, test):
        assert heldout and not [s for s, _ in heldout if overlap.normalize(s) in train_keys]
    # ~1.5% each, and a re-run gives the very same pairs in the same order.
    assert 0.01 < len(test) / (len(train) + len(dev) + len(test)) < 0.02
    assert split("test") == test and split("dev") == dev
