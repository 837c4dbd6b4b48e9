"""The hash that carves dev and test out of one corpus: pinned, so a data_dir generated again
(gettext catalogs, your own text files) keeps the very same split of every pair."""
from t2t_lite.problems import gettext, heldout, text_files


def test_the_text_files_split_of_a_source_is_pinned():
    # CRC-32 buckets (per mille): 4, 15, 10, 625, 24.
    expected = {b"message 94": "dev", b"message 255": "test", b"message 323": "test",
                b"message 0": "train", b"message 35": "train"}
    for source, split in expected.items():
        assert heldout.split_of(source, text_files.HELDOUT_SPLITS) == split


def test_a_split_given_as_a_file_takes_nothing_out_of_train():
    only_dev = {"dev": text_files.HELDOUT_SPLITS["dev"]}
    assert heldout.split_of(b"message 94", only_dev) == "dev"
    assert heldout.split_of(b"message 255", only_dev) == "train"


def test_the_gettext_split_of_a_source_is_pinned():
    # Hashed in normalised form: case and punctuation do not move a message.
    expected = {"Message 94!": "dev", "message 35": "test", "message 323": "dev",
                "message 0": "train", "MESSAGE 255.": "test"}
    for source, split in expected.items():
        assert gettext.split_of(source) == split
