"""The word cases of docs/terminology.md on the tiny model (random weights: whatever comes out
of the constraints comes from the search) with a small German SentencePiece vocabulary built
here, through TranslationModule.translate_constrained: what the decoder, the Python API and a
served model run."""
import keras
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.data import vocab
from t2t_lite.data.tokenizers import load_tokenizer
from t2t_lite.inference import constraints
from t2t_lite.inference import translation_module
from t2t_lite.model_dir import files as model_dir_lib
from t2t_lite.models.transformer import Transformer

pytestmark = pytest.mark.slow

GERMAN = ("Die Datei wurde nicht gefunden . Das Dateiformat ist ungültig . Der Dateityp ist "
          "unbekannt : Datei : »Ordner« und »%s« fehlen . Verzeichnis Verzeichnisse "
          "Verzeichnisname Formatdatei Ordner Speicher Gruppen Wurzel Dateien Dateisystem "
          "Dateiname Verzeichnissen E-Mail E-Mails E-Mail-Adresse z.B. Wi-Fi").split()


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    import random

    root = tmp_path_factory.mktemp("words")
    rng = random.Random(0)
    text = root / "de.txt"
    text.write_text("\n".join(" ".join(rng.choice(GERMAN) for _ in range(10))
                              for _ in range(400)) + "\n", encoding="utf-8")
    path = vocab.train_sentencepiece(str(text), str(root / "de.spm.model"), vocab_size=120)
    vocab_size = load_tokenizer(path).vocab_size
    gin_params = ["MAX_LENGTH = 24", "DecodeConfig.beam_size = 4", "DecodeConfig.extra_length = 16"]
    configs = hparams.load("tiny", gin_params)
    directory = str(root / "model")
    model_dir_lib.write_run_info(directory, "translate_words_test", "tiny", gin_params, path,
                                 vocab_size, configs)
    keras.utils.set_random_seed(5)
    model = Transformer(configs[0], vocab_size)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory,
                               max_to_keep=1).save(checkpoint_number=1)
    return translation_module.from_model_dir(directory, protect="none")


CASES = [
    "Datei", "Dateiformat", "Dateityp", "Verzeichnisse", "»Ordner«", "»%s«", "Datei:",
    "Dateiformat\t!Datei", "Formatdatei\t!Datei*", "Verzeichnisname\t!Verzeichnis",
    "Datei\t!Verzeichnis*", "Speicher|Gruppen\tWurzel", "»%s«\t!Ordner\t!Datei*",
    "!Datei*", "Ordner\t!Verzeichnis*|Dateisystem", "Datei\tDatei", "Wurzel\t!Datei*|Ordner*",
    "Datei\tDatei\tDatei", "Datei\tDatei\tDatei\tDatei", "Ordner|Verzeichnis\t!Verzeichnis",
    "!E-Mail*\t!z.B.*\t!Wi-Fi*", "Datei\u00a0wurde\t!E-Mail*", "Speicher\u200b\tOrdner  und",
]


def test_a_negative_is_barred_glued_to_punctuation_too(module):
    # The glued form ("Ordner" after "▁»") is a negative phrase of its own after a WORD_START.
    encoded = module.encode_constraints(tf.constant(["!Ordner"]))
    negative = encoded["negative"].numpy()[0]
    assert len(negative) == 2 and negative[1][0] == -3


@pytest.mark.parametrize("line", CASES)
def test_each_phrase_comes_out_as_words(module, line):  # noqa: D103
    result = module.translate_constrained(tf.constant(["Die Datei ."]), tf.constant([line]))
    output = result["outputs"].numpy()[0].decode()
    assert constraints.unmet_phrases(output, line) == 0, output
    assert int(result["unmet"].numpy()[0]) == 0, output
    for negative, alternatives in constraints.split_line(line):
        for alternative in alternatives:
            if negative:
                assert not constraints.barred(output, alternative), output
            else:
                pass  # one alternative suffices: unmet_phrases above


def test_a_phrase_is_not_met_inside_a_longer_word(module):
    # "Datei" forced in: the word never runs on into "Dateiformat" or "Dateityp" as the credit.
    for _ in range(1):
        result = module.translate_constrained(tf.constant(["x", "y"]),
                                              tf.constant(["Datei", "Verzeichnis"]))
        for output, phrase in zip(result["outputs"].numpy(), ["Datei", "Verzeichnis"]):
            assert constraints.occurrences(output.decode(), phrase) >= 1, output


def _barred(module, line, written):
    """The pieces a constraint line's prefix forms bar after a hypothesis that wrote the
    pieces `written`, and the vocabulary's surfaces."""
    pieces = module.prefix_pieces
    surfaces = list(pieces._surfaces)
    ids = {surface: token for token, surface in reversed(list(enumerate(surfaces)))}
    _, texts = pieces.texts(module.encode_constraints(tf.constant([line]))["negative"])
    seqs = tf.constant([[[0] + [ids[s] for s in written]]], tf.int32)
    pairs = pieces.barred(seqs, len(written), texts, module._word_starts.value,
                          module._word_ends.value)
    return {surfaces[t] for t in pairs.numpy()[:, 1]}, surfaces


@pytest.mark.parametrize("prefix", ["Datei", "Verzeichnis", "E-Mail", "z.B.", "Wi-Fi"])
def test_a_prefix_form_bars_every_piece_that_would_begin_a_word_with_it(module, prefix):
    line = f"!{prefix}*"
    barred, surfaces = _barred(module, line, [])
    start = "▁" + prefix
    assert {s for s in surfaces if s.startswith(start) or s.startswith(prefix)} <= barred
    # After every spelling in one and two pieces of a beginning of the word: what completes it.
    beginnings = [[first] for first in surfaces if first and start.startswith(first)
                  and first != start]
    beginnings += [[first, second] for [first] in beginnings for second in surfaces
                   if second and not second.startswith("▁")
                   and start.startswith(first + second) and first + second != start]
    assert any(len(spelling) == 2 for spelling in beginnings)
    for spelling in beginnings:
        written = "".join(spelling)
        wanted = {s for s in surfaces if s and not s.startswith("▁")
                  and (written + s).startswith(start)}
        assert wanted <= _barred(module, line, spelling)[0], spelling


def test_a_required_word_that_a_prefix_form_bars_is_refused(module):
    line = "Dateien\t!Datei*"
    errors = module.encode_constraints(tf.constant([line]))["errors"].numpy()
    with pytest.raises(ValueError) as refused:
        constraints.split_line(line)
    assert errors[0].decode() == str(refused.value) == (
        "the phrase 'Datei' is both required and forbidden")
