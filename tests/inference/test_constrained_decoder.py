"""t2t-lite-decoder with --constraints_file and --glossary, and the export's
translate_constrained signature, on the session's tiny model (random weights: the phrases come
out only because the search puts them there)."""
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_lite import exit_status

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
SOURCES = ["the house is small .", "a cat sat on the mat", "we read books", "",
           "the dog ran away", "she said : no ."]

pytestmark = pytest.mark.slow


def _decode(model_dir, *args):
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder",
                           f"--model_dir={model_dir}", *args],
                          capture_output=True, env=ENV, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("constrained") / "in.txt"
    path.write_text("".join(line + "\n" for line in SOURCES), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def plain(model_dir, source):
    result = _decode(model_dir, f"--decode_from_file={source}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return result.stdout.decode().split("\n")[:-1]


def test_each_line_gets_its_own_phrases_and_the_others_are_untouched(model_dir, source, plain,
                                                                     tmp_path):
    lines = ["der Hund", "", "Katze|Matte\t!the", "", "", "books"]
    constraints = tmp_path / "c.txt"
    constraints.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    summary = tmp_path / "s.json"
    result = _decode(model_dir, f"--decode_from_file={source}",
                     f"--constraints_file={constraints}", f"--summary_file={summary}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    out = result.stdout.decode().split("\n")[:-1]
    assert len(out) == len(SOURCES)
    assert "der Hund" in out[0] and "books" in out[5]
    assert ("Katze" in out[2] or "Matte" in out[2]) and "the" not in out[2].split()
    # Lines without constraints are the plain search's, token for token.
    for i in (1, 3, 4):
        assert out[i] == plain[i]
    stats = json.loads(summary.read_text())
    assert stats["constrained"] == 3 and stats["constraints_unmet"] == 0


def test_a_glossary_term_applies_where_its_source_term_is(model_dir, source, plain, tmp_path):
    glossary = tmp_path / "g.tsv"
    glossary.write_text("cat\tKatze\ndog\t!the\nzebra\tHund\n", encoding="utf-8")
    result = _decode(model_dir, f"--decode_from_file={source}", f"--glossary={glossary}",
                     "--nbest=2", "--print_scores")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    out = [line.split("\t") for line in result.stdout.decode().split("\n")[:-1]]
    assert "Katze" in out[1][1] and "Katze" in out[1][3]  # both of the n-best
    assert "the" not in out[4][1].split() and "the" not in out[4][3].split()
    assert "\t".join(out[0]) == plain[0] or len(out[0]) == 4  # untouched line: same best text
    assert "2 glossary terms applied; 2 lines constrained" in result.stderr.decode()
    assert "4 not constrained" in result.stderr.decode()


def test_glossary_terms_past_a_lines_phrase_limit_are_counted_not_lost(model_dir, source,
                                                                        tmp_path):
    # Line 2 ("a cat sat on the mat") holds 15 phrases of its own: one glossary term fits.
    words = "house small read books every day she said no dog ran away we Hund Matte".split()
    lines = ["", "\t".join(f"!{word}" for word in words), "", "", "", ""]
    constraints = tmp_path / "c.txt"
    constraints.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    glossary = tmp_path / "g.tsv"
    glossary.write_text("cat\tKatze\nmat\tMatte\nsat\t!sass\n", encoding="utf-8")
    summary = tmp_path / "s.json"
    result = _decode(model_dir, f"--decode_from_file={source}", f"--glossary={glossary}",
                     f"--constraints_file={constraints}", f"--summary_file={summary}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert ("1 glossary term applied; 2 glossary terms not applied (no room in their lines "
            "for more than 16 phrases or 128 tokens") in result.stderr.decode()
    stats = json.loads(summary.read_text())
    assert (stats["glossary_terms"], stats["glossary_terms_dropped"]) == (1, 2)


@pytest.mark.parametrize("content, message", [
    ("der Hund\n", "has 1 line but the input has 6"),
    ("a\n\nx\t\ty\n\n\n\n", ":3: an empty phrase or alternative"),
    ("\n" + "\t".join(["a"] * 17) + "\n\n\n\n\n", ":2: 17 phrases; at most 16"),
    ("\n\n\n\n\u200b\n\n", ":5: the phrase '\\u200b' has no tokens in the model's vocabulary"),
])
def test_bad_constraints_end_in_one_line_naming_the_line_and_write_nothing(
        model_dir, source, tmp_path, content, message):
    constraints = tmp_path / "c.txt"
    constraints.write_text(content, encoding="utf-8")
    out = tmp_path / "out.txt"
    result = _decode(model_dir, f"--decode_from_file={source}",
                     f"--constraints_file={constraints}", f"--decode_to_file={out}")
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in stderr, stderr[-3000:]
    assert message in stderr.strip().splitlines()[-1]
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]


def test_the_export_translates_under_constraints(export_version_dir):
    loaded = tf.saved_model.load(export_version_dir)
    signature = loaded.signatures["translate_constrained"]
    result = signature(inputs=tf.constant(["the house is small .", "we read books"]),
                       constraints=tf.constant(["der Hund|die Katze\t!the", ""]))
    outputs = [o.decode() for o in result["outputs"].numpy()]
    assert "der Hund" in outputs[0] or "die Katze" in outputs[0]
    assert "the" not in outputs[0].split() and result["unmet"].numpy().tolist() == [0, 0]
    plain = loaded.signatures["serving_default"](inputs=tf.constant(["we read books"]))
    assert outputs[1] == plain["outputs"].numpy()[0].decode()


def test_the_export_translates_as_the_module_does_line_for_line(model_dir, export_version_dir):
    # A phrase required three times, phrases in another spelling of their normal form, a
    # prefix form: the export, the Python module and the decoder's count agree.
    from t2t_lite.inference import constraints, translation_module

    sources = tf.constant(["the house is small .", "we read books", "a cat sat on the mat",
                           "the dog ran away"])
    lines = tf.constant(["der Hund\tder Hund\tder Hund", "Hund\u00a0Katze|Matte\t!Hund*",
                         "Katze\u200b\tKatze", "Hund  Katze\t!die*"])
    module = translation_module.from_model_dir(model_dir)
    loaded = tf.saved_model.load(export_version_dir)
    want = module.translate_constrained(sources, lines)
    got = loaded.signatures["translate_constrained"](inputs=sources, constraints=lines)
    assert got["outputs"].numpy().tolist() == want["outputs"].numpy().tolist()
    outputs = [o.decode() for o in want["outputs"].numpy()]
    counted = [constraints.unmet_phrases(o, line.decode())
               for o, line in zip(outputs, lines.numpy())]
    assert got["unmet"].numpy().tolist() == want["unmet"].numpy().tolist() == counted
    assert counted == [0, 0, 0, 0], outputs
    assert constraints.occurrences(outputs[0], "der Hund") == 3


def test_the_export_writes_a_negative_phrase_glued_as_the_module_does(model_dir,
                                                                       export_version_dir):
    # Both SentencePiece models live in the export: the glued form is not the spaced one.
    from t2t_lite.inference import translation_module

    lines = tf.constant(["!Hund", "!Katze*"])
    module = translation_module.from_model_dir(model_dir)
    loaded = tf.saved_model.load(export_version_dir)
    want = module.encode_constraints(lines)["negative"].numpy()
    assert (loaded.encode_constraints(lines)["negative"].numpy() == want).all()
    assert want[0, 1, 0] == -3 and want[0, 1, 1] != want[0, 0, 0]


def test_shards_with_constraints_join_into_the_whole_files_output(model_dir, source, tmp_path):
    lines = ["der Hund", "", "Katze|Matte\t!the", "", "", "books"]
    constraints = tmp_path / "c.txt"
    constraints.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    whole = _decode(model_dir, f"--decode_from_file={source}",
                    f"--constraints_file={constraints}", "--parallel_searches=1")
    assert whole.returncode == 0, whole.stderr.decode()[-3000:]
    parts = []
    for index in range(2):
        out = tmp_path / f"out.{index}"
        result = _decode(model_dir, f"--decode_from_file={source}",
                         f"--constraints_file={constraints}", "--num_shards=2",
                         f"--shard_index={index}", f"--decode_to_file={out}", "--chunk_lines=2",
                         "--parallel_searches=2")
        assert result.returncode == 0, result.stderr.decode()[-3000:]
        parts.append(out.read_bytes())
    assert b"".join(parts) == whole.stdout
