"""WMT14 problems end to end on a tiny fake corpus with the real archive names and layouts,
served over HTTP from 127.0.0.1 (or read from --raw_dir), down to TFRecords and batches."""
import gzip
import hashlib
import importlib.util
import io
import pathlib
import shutil
import tarfile

import pytest

from t2t_lite import exit_status, registry
from t2t_lite.data import download, text_io
from t2t_lite.errors import UserError
from t2t_lite.problems import wmt14

_spec = importlib.util.spec_from_file_location(
    "http_fixture", pathlib.Path(__file__).parent.parent / "data" / "http_fixture.py")
http_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(http_fixture)

WORDS = {"de": ["das", "Haus", "ist", "rot", "blau", "groß"],
         "fr": ["la", "maison", "est", "rouge", "bleue", "grande"],
         "en": ["the", "house", "is", "red", "blue", "big"]}


def _sentences(lang, corpus, n):
    w = WORDS[lang]
    return [f"{w[0]} {w[1]} {corpus} {i} {w[2]} {w[3 + i % 3]}" for i in range(n)]


def _lines(sentences, extra=b""):
    return "\n".join(sentences).encode("utf-8") + b"\n" + extra


def _sgm(kind, lang, sentences):
    segs = "".join(f'<seg id="{i + 1}">  {s}   </seg>\n' for i, s in enumerate(sentences))
    return (f'<{kind}set setid="newstest2014" srclang="any" trglang="{lang}">\n'
            f'<doc sysid="ref" docid="d1" genre="news" origlang="en">\n<p>\n{segs}</p>\n</doc>\n'
            f'</{kind}set>\n').encode("utf-8")


def _tar(members, mode="w:gz"):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _corpus_archives():
    """archive key -> (real file name, bytes): the statmt.org layouts, a few lines each."""
    archives = {}

    def pair_members(stem_de, stem_fr, corpus, n, de_extra=b"", en_extra=b""):
        en = _sentences("en", corpus, n)
        return {f"{stem_de}.en": _lines(en, en_extra),
                f"{stem_de}.de": _lines(_sentences("de", corpus, n), de_extra),
                f"{stem_fr}.en": _lines(en), f"{stem_fr}.fr": _lines(_sentences("fr", corpus, n))}

    # Europarl carries two bad pairs: invalid UTF-8 on the German side and an empty English side.
    archives["europarl_v7"] = _tar(pair_members(
        "training/europarl-v7.de-en", "training/europarl-v7.fr-en", "europarl", 12,
        de_extra=b"kaputt \xff\xfe\nleer\n", en_extra=b"broken\n\n"))
    archives["commoncrawl"] = _tar(pair_members("commoncrawl.de-en", "commoncrawl.fr-en", "crawl", 8))
    archives["news_commentary_v9"] = _tar(pair_members(
        "training/news-commentary-v9.de-en", "training/news-commentary-v9.fr-en", "news", 6))
    archives["un"] = _tar({"un/undoc.2000.fr-en.en": _lines(_sentences("en", "un", 5)),
                           "un/undoc.2000.fr-en.fr": _lines(_sentences("fr", "un", 5))})
    archives["giga_fren"] = _tar({  # a plain tar of gzip'd line files
        "giga-fren.release2.fixed.en.gz": gzip.compress(_lines(_sentences("en", "giga", 7))),
        "giga-fren.release2.fixed.fr.gz": gzip.compress(_lines(_sentences("fr", "giga", 7)))},
        mode="w")
    archives["dev"] = _tar({f"dev/newstest2013.{lang}": _lines(_sentences(lang, "newstest", 4))
                            for lang in ("en", "de", "fr")})
    archives["test_full"] = _tar({
        "test-full/newstest2014-deen-src.en.sgm": _sgm("src", "en", _sentences("en", "test", 3)),
        "test-full/newstest2014-deen-ref.de.sgm": _sgm("ref", "de", _sentences("de", "test", 3)),
        "test-full/newstest2014-fren-src.en.sgm": _sgm("src", "en", _sentences("en", "test", 3)),
        "test-full/newstest2014-fren-ref.fr.sgm": _sgm("ref", "fr", _sentences("fr", "test", 3))})
    return {key: (wmt14.ARCHIVES[key].name, data) for key, data in archives.items()}


def _served(srv, archives):
    """Table of RemoteFiles pointing at the local server, with the fakes' real checksums."""
    table = {}
    for key, (name, data) in archives.items():
        path = "/" + key + "/" + name
        srv.files[path] = data
        table[key] = download.RemoteFile(srv.url(path), sha256=hashlib.sha256(data).hexdigest(),
                                         size=len(data))
    return table


def _decoded(problem, data_dir, split):
    tokenizer = problem.tokenizer(str(data_dir))
    ds = problem.dataset(split, str(data_dir), batch_tokens=256, max_length=64)
    out = {"inputs": [], "targets": []}
    for batch in ds:
        for key in out:
            out[key] += [t.decode("utf-8") for t in tokenizer.decode(batch[key]).numpy()]
    return out


def test_registered():
    names = registry.list_problems()
    assert "translate_ende_wmt14" in names and "translate_enfr_wmt14" in names


def test_ende_downloads_and_generates_tfrecords(tmp_path):
    archives = _corpus_archives()
    with http_fixture.LocalServer({}) as srv:
        problem = registry.problem("translate_ende_wmt14", archives=_served(srv, archives))
        problem.vocab_size = 120  # the paper's 37k needs the paper's data
        data_dir, tmp_dir = tmp_path / "data", tmp_path / "tmp"
        manifests = problem.generate_data(str(data_dir), str(tmp_dir))
        used = {path.split("/")[1] for path, _ in srv.requests}
        assert used == {"europarl_v7", "commoncrawl", "news_commentary_v9", "dev", "test_full"}

        train = manifests["train"]
        assert train["written"] == 12 + 8 + 6
        assert train["skipped:invalid_utf8"] == 1
        assert train["skipped:empty_side"] == 1
        assert manifests["dev"]["written"] == 4
        assert problem.eval_text_pairs(str(data_dir), "dev") == list(
            zip(_sentences("en", "newstest", 4), _sentences("de", "newstest", 4)))
        # sgm segments are stripped and whitespace-collapsed, as sacrebleu reads them.
        assert problem.eval_text_pairs(str(data_dir), "test") == list(
            zip(_sentences("en", "test", 3), _sentences("de", "test", 3)))
        assert (data_dir / "translate_ende_wmt14.spm.model").exists()
        assert (tmp_dir / "downloads" / "training-parallel-europarl-v7.tgz").exists()

        # The TFRecords hold the right text: ids decode back to the source sentences.
        decoded = _decoded(problem, data_dir, "test")
        assert sorted(decoded["targets"]) == sorted(_sentences("de", "test", 3))
        assert sorted(decoded["inputs"]) == sorted(_sentences("en", "test", 3))

        # A second run finds everything done: no download, no request.
        before = len(srv.requests)
        again = problem.generate_data(str(data_dir), str(tmp_dir))
        assert all(m.get("already_complete") for m in again.values())
        assert len(srv.requests) == before


def test_enfr_from_raw_dir_without_network(tmp_path):
    archives = _corpus_archives()
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    for name, data in archives.values():
        (raw_dir / name).write_bytes(data)
    with http_fixture.LocalServer({}) as srv:
        table = _served(srv, archives)  # checksums of the fakes; the server must stay unused
        problem = registry.problem("translate_enfr_wmt14", raw_dir=str(raw_dir), archives=table)
        problem.vocab_size = 150
        manifests = problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
        assert srv.requests == []
    assert manifests["train"]["written"] == 12 + 8 + 6 + 5 + 7
    assert manifests["test"]["written"] == 3
    decoded = _decoded(problem, tmp_path / "data", "dev")
    assert sorted(decoded["targets"]) == sorted(_sentences("fr", "newstest", 4))


def test_raw_dir_with_extracted_files_needs_no_archive(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "newstest2013.en").write_text("Hello\nWorld\n")
    (tmp_path / "newstest2013.de").write_text("Hallo\nWelt\n")  # base name only is fine too
    problem = registry.problem("translate_ende_wmt14", raw_dir=str(tmp_path))
    assert list(problem.generate_samples("dev", str(tmp_path / "tmp"))) == [
        (b"Hello", b"Hallo"), (b"World", b"Welt")]


def test_extracted_corpus_is_reused_without_its_archive(tmp_path):
    archives = _corpus_archives()
    with http_fixture.LocalServer({}) as srv:
        problem = registry.problem("translate_ende_wmt14", archives=_served(srv, archives))
        first = list(problem.generate_samples("test", str(tmp_path)))
        (tmp_path / "downloads" / "test-full.tgz").unlink()
        assert list(problem.generate_samples("test", str(tmp_path))) == first
        assert len(srv.requests) == 1
    assert first[0] == (b"the house test 0 is red", b"das Haus test 0 ist rot")


def test_raw_dir_archive_with_wrong_checksum_is_refused(tmp_path):
    archives = _corpus_archives()
    name, data = archives["dev"]
    (tmp_path / name).write_bytes(data)
    problem = registry.problem("translate_ende_wmt14", raw_dir=str(tmp_path))  # real checksums
    with pytest.raises(UserError, match="checksum mismatch"):
        list(problem.generate_samples("dev", str(tmp_path / "tmp")))


def test_raw_dir_missing_corpus_says_where_to_get_it(tmp_path):
    problem = registry.problem("translate_enfr_wmt14", raw_dir=str(tmp_path))
    with pytest.raises(UserError, match="lacks 5 archive.*training-giga-fren.tar from https://"):
        list(problem.generate_samples("train", str(tmp_path / "tmp")))


def test_sgm_pairs_count_unpaired_segments(tmp_path):
    src, ref = tmp_path / "src.sgm", tmp_path / "ref.sgm"
    src.write_bytes(_sgm("src", "en", ["a  b", "c", "d"]))
    ref.write_bytes(_sgm("ref", "de", ["x", "y"]))
    assert list(wmt14.read_sgm_pair(src, ref)) == [
        (b"a b", b"x"), (b"c", b"y"), text_io.Skipped("unpaired_line")]


def test_archive_table_has_real_checksums_or_says_how_it_verifies():
    for key, remote in wmt14.ARCHIVES.items():
        assert remote.url.startswith("https://") and "statmt.org" in remote.url, key
        assert remote.verification in ("sha256", "md5"), key
    assert wmt14.ARCHIVES["test_full"].verification == "md5"


def test_extraction_limits_are_problem_params(tmp_path):
    # --problem_param values arrive as strings.
    archives = _corpus_archives()
    with http_fixture.LocalServer({}) as srv:
        problem = registry.problem("translate_ende_wmt14", archives=_served(srv, archives),
                                   max_extract_bytes="100")
        with pytest.raises(UserError, match="total past 100 bytes.*max_extract_bytes"):
            list(problem.generate_samples("test", str(tmp_path)))
    assert not list((tmp_path / "extracted" / "test_full").iterdir())
    with pytest.raises(UserError, match="max_extract_ratio must be a positive number"):
        registry.problem("translate_ende_wmt14", max_extract_ratio="lots")


# ----------------------------------------------------------------------------- the card's names

CARD_COMMAND = ["--problem=wmt14_ende", "--hparams_set=base"]


def test_an_alias_shares_the_model_dir(tmp_path):
    """A model_dir trained under wmt14_ende resumes under translate_ende_wmt14 and back: run.json
    records the registered name, and a run.json naming an alias compares as that problem."""
    import json

    from t2t_lite import hparams
    from t2t_lite.model_dir import files

    vocab_file = tmp_path / "translate_ende_wmt14.spm.model"
    vocab_file.write_bytes(b"a vocabulary")
    configs = hparams.load("tiny")
    model_dir = str(tmp_path / "M")
    for name in ("wmt14_ende", "translate_ende_wmt14", "wmt14_ende"):
        info = files.write_run_info(model_dir, name, "tiny", [], str(vocab_file), 50, configs)
        assert info["problem"] == "translate_ende_wmt14"
    # One written by hand (or by a future version) under the alias is the same problem too.
    run_json = tmp_path / "M" / files.RUN_INFO
    run_json.write_text(json.dumps(dict(json.loads(run_json.read_text()), problem="wmt14_ende")))
    files.write_run_info(model_dir, "translate_ende_wmt14", "tiny", [], str(vocab_file), 50,
                         configs)
    for other in ("wmt14_enfr", "translate_enfr_wmt14"):
        with pytest.raises(UserError, match="holds a run with problem='translate_ende_wmt14', "
                                            "not 'translate_enfr_wmt14'"):
            files.write_run_info(model_dir, other, "tiny", [], str(vocab_file), 50, configs)


def test_the_card_command_without_dirs_says_the_full_form_in_one_line():
    import os
    import subprocess
    import sys

    # As a user runs it: the tool quiets TensorFlow itself (conftest's TF_CPP_MIN_LOG_LEVEL
    # would count as the user's and show its start-up lines).
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.trainer", *CARD_COMMAND],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.splitlines() == [
        "error: --data_dir and --model_dir are required: t2t-lite-trainer --problem=wmt14_ende "
        "--hparams_set=base --data_dir=DATA_DIR --model_dir=MODEL_DIR (see --helpshort)"]


# The console script's own entry (t2t-lite-trainer is `t2t_lite.bin.trainer:run`) in a fresh
# interpreter. The one change: when main starts, ARCHIVES points at the local server with the
# fakes' checksums, as `archives=` does for the tests above (a test can reach neither statmt.org
# nor the real checksums). Patched inside main, so TensorFlow loads where the tool loads it.
_TRAINER = """
import functools, json, sys
from t2t_lite.bin import trainer
table = json.loads(sys.argv.pop(1))
tool_main = trainer.main

@functools.wraps(tool_main)
def main(argv):
    from t2t_lite.data.download import RemoteFile
    from t2t_lite.problems import wmt14
    wmt14.ARCHIVES.update({key: RemoteFile(url, sha256=sha256, size=size)
                           for key, (url, sha256, size) in table.items()})
    return tool_main(argv)

trainer.main = main
sys.argv[0] = "t2t-lite-trainer"
sys.exit(trainer.run())
"""


@pytest.mark.slow
def test_the_card_command_trains_one_step(tmp_path):
    """`t2t-lite-trainer --problem=wmt14_ende --hparams_set=base` as the card gives it, plus only
    --generate_data, the two folders, one step and a small batch: it downloads the (fake)
    corpora from the local server, writes the data and trains one step of the base model. The
    long name then takes the same data and model_dir."""
    import json
    import os
    import subprocess
    import sys

    import tensorflow as tf

    data_dir, model_dir = tmp_path / "D", tmp_path / "M"
    # As a user runs it: the tool quiets TensorFlow itself.
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    with http_fixture.LocalServer({}) as srv:
        table = json.dumps({key: [remote.url, remote.sha256, remote.size]
                            for key, remote in _served(srv, _corpus_archives()).items()})

        def trainer(*command):
            result = subprocess.run(
                [sys.executable, "-c", _TRAINER, table, *command, "--generate_data",
                 f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--train_steps=1",
                 "--gin_param=TrainConfig.batch_tokens=256"],
                capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
            assert result.returncode == 0, result.stderr[-3000:]
            assert "Traceback" not in result.stderr, result.stderr[-3000:]
            return result

        result = trainer(*CARD_COMMAND)
        assert "stopped at step 1 (train_steps)" in result.stdout, result.stdout[-2000:]
        assert {path.split("/")[1] for path, _ in srv.requests} == {
            "europarl_v7", "commoncrawl", "news_commentary_v9", "dev", "test_full"}
        # The data and the model_dir carry the registered name, so the long name shares them:
        # nothing downloaded again, the model_dir resumed at its step, not refused.
        assert (data_dir / "translate_ende_wmt14.spm.model").is_file()
        assert json.loads((model_dir / "run.json").read_text())["problem"] == \
            "translate_ende_wmt14"
        latest = tf.train.latest_checkpoint(str(model_dir))
        assert latest is not None and latest.endswith("ckpt-1"), (latest, result.stderr[-2000:])
        configs = json.loads((model_dir / "configs.json").read_text())
        assert configs["model"]["d_model"] == 512 and configs["model"]["num_layers"] == 6

        requests = len(srv.requests)
        trainer("--problem=translate_ende_wmt14", "--hparams_set=base")
        assert len(srv.requests) == requests
    assert tf.train.latest_checkpoint(str(model_dir)) == latest
    shutil.rmtree(model_dir)  # ~0.7 GB of base checkpoints: not worth pytest's keeping
