"""--no_repeat_ngram_size in every engine: the checkpoint's search (--model_dir), the exported
SavedModel's signatures and CTranslate2 give the same translations under each setting, on the
trained reverse model of tests/reverse_model.py (sources with repeated symbols, so that their
reversals repeat n-grams and the rule has work); the setting travels in DecodeConfig, the
export's describe() and the CTranslate2 folder's settings, and a wrong one ends in one line."""
import json

import numpy as np
import pytest
import tensorflow as tf

ctranslate2 = pytest.importorskip("ctranslate2")

from t2t_lite import exit_status, model_source  # noqa: E402
from t2t_lite.errors import UserError  # noqa: E402
from t2t_lite.inference import ctranslate2_engine, saved_model, translation_module  # noqa: E402

from tests.reverse_model import EXTRA, TOKENS  # noqa: E402

# Reversing these repeats bigrams and trigrams ("s3 s4 s3 s4 ...").
SOURCES = [[3, 4, 3, 4, 3, 4], [5, 5, 5, 6], [7, 8, 9, 7, 8, 9, 7], [10, 11, 10, 11, 12],
           [3, 3, 4, 4, 3, 3], [13, 14, 15, 16], [6, 5, 6, 5, 6, 5, 6, 5], [17, 18, 17, 19, 17]]


def _text(ids):
    return " ".join(TOKENS[i] for i in ids)


def _repeats_an_ngram(words, n):
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)


def _module_nbest(model_dir, n, beam_size=4):
    module = translation_module.from_model_dir(model_dir, no_repeat_ngram_size=n,
                                               beam_size=beam_size)
    result = module.translate_with_settings(tf.constant([_text(s) for s in SOURCES]),
                                            tf.constant(_alpha(beam_size)), tf.constant(EXTRA))
    return ([o.decode().split() for o in result["outputs"][:, 0].numpy()],
            result["scores"][:, 0].numpy())


def _alpha(beam_size):
    return 0.6 if beam_size > 1 else 0.0


@pytest.fixture(scope="module")
def export_n2(trained_model_dir, tmp_path_factory, cli):
    """trained_model_dir exported with --no_repeat_ngram_size=2 (the CLI's flag)."""
    export_dir = tmp_path_factory.mktemp("no_repeat_export") / "e"
    result = cli("exporter", f"--model_dir={trained_model_dir}", f"--export_dir={export_dir}",
                 "--no_repeat_ngram_size=2")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return str(export_dir / "1")


# The table: (beam, n). Beam 1 takes n = 1 too: at beam 4 the rule's n = 1 leaves short
# hypotheses whose CTranslate2 length normalisation (length ** alpha, not GNMT's) cuts them from
# its n-best before translate_tokens re-ranks it, an engine difference the rule only exposes.
TABLE = [(1, 1), (1, 2), (1, 3), (4, 0), (4, 2), (4, 3), (4, 4)]


@pytest.mark.slow
def test_every_engine_gives_the_same_translations_under_each_setting(trained_model_dir,
                                                                     ct2_dir):
    """For each (beam, n) of TABLE the checkpoint's search and CTranslate2 give the same best
    hypotheses and scores; with n > 0 none repeats an n-gram, and the rule changes lines."""
    ct2 = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=1)
    table = {}
    for beam_size, n in TABLE:
        expected, scores = _module_nbest(trained_model_dir, n, beam_size)
        got = ctranslate2_engine.translate_tokens(
            ct2, [[TOKENS[i] for i in s] for s in SOURCES], beam_size=beam_size,
            alpha=_alpha(beam_size), extra_length=EXTRA, max_length=24,
            no_repeat_ngram_size=n)
        assert [hyps[0][0] for hyps in got] == expected, (beam_size, n)
        np.testing.assert_allclose([hyps[0][1] for hyps in got], scores, rtol=1e-2, atol=5e-3)
        if n:
            assert not any(_repeats_an_ngram(words, n) for words in expected), (n, expected)
        table[beam_size, n] = expected
    # Without the rule the trained model reverses, repeats included: the rule has work.
    assert sum(e == [TOKENS[i] for i in s[::-1]] for e, s in zip(table[4, 0], SOURCES)) >= 5
    for n in (2, 3, 4):
        assert table[4, n] != table[4, 0]


@pytest.mark.slow
def test_the_export_runs_its_setting_in_every_signature(trained_model_dir, export_n2):
    expected, scores = _module_nbest(trained_model_dir, 2)
    loaded = saved_model.load(export_n2)
    assert json.loads(loaded.describe().numpy())["no_repeat_ngram_size"] == 2
    assert loaded.settings.no_repeat_ngram_size == 2
    inputs = tf.constant([_text(s) for s in SOURCES])
    nbest = loaded.nbest(inputs)
    assert [o.decode().split() for o in nbest["outputs"][:, 0].numpy()] == expected
    np.testing.assert_allclose(nbest["scores"][:, 0].numpy(), scores, rtol=1e-5)
    served = loaded.serve(inputs)
    assert [o.decode().split() for o in served["outputs"].numpy()] == expected
    # The constrained signature keeps the rule, and a required phrase that repeats a bigram
    # the output already holds is still written: the constraint wins.
    constrained = loaded.translate_constrained(inputs, tf.constant([""] * len(SOURCES)))
    assert [o.decode().split() for o in constrained["outputs"].numpy()] == expected
    phrase = "s4 s3 s4 s3"
    forced = loaded.translate_constrained(tf.constant([_text(SOURCES[0])]),
                                          tf.constant([phrase]))
    assert forced["unmet"].numpy().tolist() == [0]
    assert phrase in forced["outputs"].numpy()[0].decode()


@pytest.mark.slow
def test_settings_travel_and_a_wrong_one_is_refused(trained_model_dir, ct2_dir, export_n2):
    with pytest.raises(UserError, match=r"exported with --no_repeat_ngram_size=2; re-export "
                       r"with --no_repeat_ngram_size=3 or decode with --model_dir"):
        model_source.load(export_dir=export_n2, no_repeat_ngram_size=3)
    assert model_source.load(export_dir=export_n2, no_repeat_ngram_size=2)
    engine = model_source.load(export_dir=ct2_dir, engine="ctranslate2", no_repeat_ngram_size=3)
    assert engine.settings.no_repeat_ngram_size == 3  # CTranslate2 takes it per call
    module = model_source.load(model_dir=trained_model_dir, no_repeat_ngram_size=1)
    assert json.loads(module.describe().numpy())["no_repeat_ngram_size"] == 1


@pytest.mark.parametrize("value, message", [
    ("-1", "--no_repeat_ngram_size"), ("33", "--no_repeat_ngram_size")])
def test_decoder_refuses_a_setting_outside_its_bounds(tmp_path, cli, value, message):
    (tmp_path / "in.txt").write_text("s3 s4\n")
    result = cli("decoder", f"--model_dir={tmp_path}", f"--no_repeat_ngram_size={value}",
                 f"--decode_from_file={tmp_path / 'in.txt'}")
    assert result.returncode == exit_status.USER_ERROR
    last = result.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("error: ") and message in last and value in last
