"""docs/troubleshooting.md stays honest about the `error: ...` lines the tools print.

Every message a CLI can end with (a UserError raised anywhere in t2t_lite/; cli.run prints it as
`error: MESSAGE`) is either quoted on the page or listed in ALLOWED below with the reason the page
leaves it out; and every message the page quotes is one the code still prints.

A message in the code is its text with holes where an f-string puts values. The page quotes an
error as `error: ...` in a code block line or an inline code span, with example values in the
holes; "..." in a quote stands for any text left out.
"""
import ast
import functools
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "t2t_lite"
PAGE = ROOT / "docs" / "troubleshooting.md"

HOLE, ELIDED = "\x00", "\x01"

# Reasons the page leaves a message out, shared by many entries below.
SAYS_FIX = "the line names the flag or file and says what to give instead"
FLAG_VALUE = "a flag value out of range; the line names the flag and the range"
FLAG_PAIR = "two flags that do not go together; the line says which"
DAMAGED = "a damaged or hand-edited file; the line names it and what is wrong"
OS_ERROR = "the operating system's reason is in the line (missing, permissions, disk full)"
RARE = "only a hand-built or corrupted input gets here; the line names the file and the fault"
SLURM_VARIABLE = "a variable srun sets, wrong only when set by hand; the line names it"
TABLE3 = "t2t-lite-table3's own run; docs/table3.md describes its folder and resumption"

# module (relative to t2t_lite/) -> {a substring of the message's text: why it is not quoted}
ALLOWED = {
    "bin/decoder.py": {
        "the summary replaces its file whole": SAYS_FIX,
        "is not writable": SAYS_FIX,
        "is also --decode_to_file": SAYS_FIX,
        "the summary would replace it": SAYS_FIX,
    },
    "bin/exporter.py": {
        "--quantization applies to": FLAG_PAIR,
        "--decode_precision applies to --format=savedmodel": FLAG_PAIR,
        "--protect applies to --format=savedmodel": FLAG_PAIR,
    },
    "bin/po.py": {"is given {} times; t2t-lite-po translates one catalog": SAYS_FIX},
    "bin/table3.py": {"required (see --helpshort)": "names the missing flags; --helpshort lists them"},
    "cli.py": {
        "unexpected arguments:": "the tools take flags only; the line shows what was left over",
        "required: {} (see --helpshort)": "prints the command again with the missing flags added",
    },
    "data/archives.py": {
        "stopped extracting": "the line says what to raise if the archive is genuine",
        "refusing to extract unsafe archive member": RARE,
        "cannot extract member": "the line names what is in the way and says to move it",
        "is not a tar, zip or gzip archive": RARE,
        "lacks the expected member(s)": RARE,
        "damaged or not an archive": DAMAGED,
    },
    "data/download.py": {
        "cannot derive a file name from URL": "only a Problem author's code gets here",
        "missing file": "the line names the file and the download it expected",
        "checksum mismatch for": "the line says what was deleted and what to do",
        "cannot download {}: HTTP": "the server's own HTTP status is in the line",
        "could not download": "the line says a re-run resumes the download",
    },
    "data/problem.py": {
        "no vocabulary": "the line gives the t2t-lite-datagen command to run",
        "no valid training pairs": "datagen's report before it counts what was skipped and why",
        "no complete": "the line gives the t2t-lite-datagen command to run",
        "unknown mode": "only a Problem author's code gets here",
        "eval_text_pairs: split": "only a Problem author's code gets here",
    },
    "data/sentences.py": {"no sentence splitting rules": "the line lists the known languages"},
    "data/tokenizers.py": {"subword sampling needs": SAYS_FIX},
    "data/translation.py": {
        "unknown vocabulary file type": SAYS_FIX,
        "is not the vocabulary of vocab_from=": "the line says to use another --data_dir",
    },
    "data/vocab.py": {
        "names the vocabulary": DAMAGED,
        "is neither a vocabulary file nor a model_dir": SAYS_FIX,
        "its vocabulary {} is missing": SAYS_FIX,
    },
    "export/ctranslate2_export.py": {
        "have no counterpart in CTranslate2's Transformer": "only a model variant with weights "
                                                            "the package's Transformer lacks",
        "d_k={} differs from d_v=": "the line says what CTranslate2 cannot hold; docs/ctranslate2.md",
        "the vocabulary has {} tokens but the model": DAMAGED,
        "the vocabulary must start with": "docs/ctranslate2.md says which vocabularies convert",
        "appears twice in the vocabulary": "docs/ctranslate2.md says which vocabularies convert",
        "exists and is not an empty directory": SAYS_FIX,
        "cannot convert to CTranslate2: {}": "the converter's own reason is in the line",
    },
    "export/saved_model_versions.py": {"exists and is not a directory": SAYS_FIX},
    "export/exporters.py": {"unknown export format": "the line lists the known formats"},
    "formats.py": {"not a positive integer": DAMAGED},
    "file_decoding.py": {
        "needs --engine=tensorflow": FLAG_PAIR,
        "must be >= 1, got": FLAG_VALUE,
        "--constraints_file needs a regular file as the input": FLAG_PAIR,
        "--output_format must be one of": FLAG_VALUE,
        "--nbest must be between 1 and the beam size": FLAG_VALUE,
        "one file cannot be read as both": "a glossary or constraints file that is the input "
                                           "(or the other one); the line names both",
    },
    "file_lock.py": {
        "its lock {} cannot be created": OS_ERROR,
        "cannot take the lock (it keeps changing)": "a race between two runs starting at once",
        "exists and is not a t2t_lite lock": "the line says to move the file away",
    },
    "file_scoring.py": {
        "--alpha needs --model_dir": FLAG_PAIR,
        "must be >= 1, got": FLAG_VALUE,
        "give --pairs_file or --source_file": FLAG_PAIR,
        "--source_file and --target_file go together": FLAG_PAIR,
        "--pad_shorter needs": FLAG_PAIR,
    },
    "hparams.py": {
        "--hparams_set names a set, not a path": "the line lists the sets and names --gin_file",
        "unknown hparams set": "the line lists the known sets",
        "bad gin configuration for set": "gin's own reason, with the line of the file, follows",
        "bad hparams:": "the value's own check says what is wrong",
        "gin: {}": "gin's own message about a --gin_param or --gin_file follows",
        "--gin_file {} does not exist": SAYS_FIX,
    },
    "cluster_env.py": {
        "a cluster needs at least one worker": FLAG_VALUE,
        "is out of range for --workers": "the line says to match the Job's completions",
        "has no {index}": SAYS_FIX,
        "is not a TCP port": FLAG_VALUE,
        "is not set: run this in a Job with completionMode: Indexed": SAYS_FIX,
        "has braces other than {index}": SAYS_FIX,
        "is not a worker index": FLAG_VALUE,
        "no command to run": SAYS_FIX,
        "cannot run {}: {}": OS_ERROR,
        # --slurm (deploy/slurm/train.sbatch): srun sets these variables; the line names the one
        # that is missing or does not fit, and docs/training.md's Slurm section shows the run.
        "SLURM_PROCID is not set": SAYS_FIX,
        "SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set": SAYS_FIX,
        "{}={} is not a number": SLURM_VARIABLE,
        "is not a Slurm host list": SLURM_VARIABLE,
        "is not Slurm's tasks per node": SLURM_VARIABLE,
        "gives {} node(s)": SLURM_VARIABLE,
        "places {} task(s)": SLURM_VARIABLE,
        "SLURM_PROCID={} is out of range": SLURM_VARIABLE,
        "(tasks on one node) is past 65535": FLAG_VALUE,
        "--slurm takes the workers from Slurm's variables": FLAG_PAIR,
    },
    "inference/batching.py": {
        "per search step for one line": "the line names the setting to lower and --batch_tokens",
    },
    "inference/batch_decode.py": {
        "this export has no constrained search": "the line says to re-export",
        "--nbest must be between 1 and the beam size": FLAG_VALUE,
    },
    "inference/translator.py": {
        "function (an older t2t_lite wrote it); re-export it": "the line says to re-export",
    },
    "inference/constraints.py": {
        "does not exist": SAYS_FIX,
        "is not UTF-8": "the line gives the byte offset of the first bad byte",
        "cannot read": OS_ERROR,
        "{} {}:{}: {}": "a bad constraint line: the file, the line and the fault are in it; "
                        "docs/terminology.md gives the syntax",
    },
    "inference/ctranslate2_engine.py": {
        "is not a CTranslate2 folder": SAYS_FIX,
        "cannot read": OS_ERROR,
        "needs the ctranslate2 package": "the line gives the pip command",
        "holds no vocabulary file named by": DAMAGED,
        "CTranslate2 cannot load": "CTranslate2's own reason is in the line; docs/ctranslate2.md",
    },
    "inference/line_input.py": {
        "--shard_index must be in": FLAG_VALUE,
        "--num_shards needs": "a pipe has no line count to split; the line says so",
        "cannot read": OS_ERROR,
        "is longer than": "the line names the input line and says to split or remove it",
        "does not exist or is not a file": SAYS_FIX,
        "the files are not parallel": "the line gives both files' line counts",
        "the inputs are not parallel": "the line names the shorter input",
    },
    "inference/parallel_search.py": {"--parallel_searches must be >= 0": FLAG_VALUE},
    "inference/protected_spans.py": {"--protect={}: expected": "the line lists the known kinds"},
    "inference/resume.py": {
        "cannot read the model at": OS_ERROR,
        "cannot write": OS_ERROR,
        "folder {} does not exist": SAYS_FIX,
        "is not a folder": SAYS_FIX,
        "is a directory; name a file": SAYS_FIX,
        "the name is too long": "the line says how long a name may be",
        "writing it would destroy what is being read": SAYS_FIX,
        "cannot open": OS_ERROR,
        "is open for reading only": "a shell redirection the wrong way round (`1<file`)",
        "{}": "a closed standard stream or descriptor; the text is chosen beside it",
        "records an unfinished run over": "the line says both ways out: the input file, or "
                                          "--start_over",
    },
    "inference/saved_model.py": {
        "no SavedModel in": "the line says how the folder should look and how to make one",
        "cannot read {}: {}": DAMAGED,
        "cannot read {}.index": DAMAGED,
    },
    "inference/scoring.py": {"tab-separated columns, not 2": "the line names the line and format"},
    "metrics/bleu.py": {
        "translation has {} but reference has": "the line gives both counts",
        "nothing to score": "both files are empty",
        "unknown tokenize=": "the line lists sacrebleu's tokenizers",
    },
    "metrics/parseval.py": {
        "is a folder; name a file of trees": SAYS_FIX,
        "file not found": SAYS_FIX,
        "the test needs one line per gold tree": "the line gives the counts; docs/parsing.md",
    },
    "metrics/report.py": {
        "file not found": SAYS_FIX,
        "file is not UTF-8 text": "the line gives the byte offset of the first bad byte",
    },
    "model_dir/averaging.py": {
        "--num_last must be >= 1": FLAG_VALUE,
        "--window must be one of": FLAG_VALUE,
        "no checkpoints in": "the trainer has not saved there yet",
        "cannot average:": "the checkpoint reader's reason follows",
    },
    "model_dir/limits.py": {
        "is outside the sane range": DAMAGED,
        "more than the sane": DAMAGED,
        "GiB of memory": "the model needs more memory than the machine has; the line says so",
        "beam steps per line is more than the sane": DAMAGED,
        "is incomplete": "a checkpoint copied in part; the line names the missing file",
        "is damaged or truncated": DAMAGED,
        "which checkpoint {} does not have": DAMAGED,
        "which the model {} describes does not have": DAMAGED,
        "gives shape": DAMAGED,
        "holds no t2t_lite settings": DAMAGED,
        "model_config is not a t2t_lite model": DAMAGED,
    },
    "model_dir/checkpoint_reader.py": {
        "is incomplete": "a checkpoint copied in part; the line names the missing file",
        "is damaged or truncated": DAMAGED,
        "does not fit this model": DAMAGED,
        "no checkpoint at": SAYS_FIX,
        "no checkpoint in": "the line says to train first",
    },
    "model_dir/checkpoint_saver.py": {"cannot resume:": "the line says how to recover"},
    "model_dir/outputs.py": {
        "is a model_dir's {}/, its best dev checkpoint": SAYS_FIX,
        "exists and is not a folder": SAYS_FIX,
        "is a model_dir (it has run.json or configs.json)": SAYS_FIX,
        "is a model_dir: exports go to a folder of their own": SAYS_FIX,
        "holds checkpoints ({}): exports go to": SAYS_FIX,
    },
    "model_dir/files.py": {
        "is not a t2t_lite model_dir": "the line says to train into it first",
        "cannot read": DAMAGED,
        "is not a t2t_lite run.json": DAMAGED,
        "is not a t2t_lite configs file": DAMAGED,
        "has no {}; train into it": "the line says to train into it first",
    },
    "model_dir/loaded.py": {"says vocab_size": DAMAGED},
    "model_source.py": {
        "give exactly one of --model_dir and --export_dir": FLAG_PAIR,
        "--checkpoint_path needs --model_dir": FLAG_PAIR,
        "--decode_precision is TensorFlow's": FLAG_PAIR,
        "--compute_type applies to": FLAG_PAIR,
        "--decode_precision needs --model_dir": FLAG_PAIR,
        "was exported with beam size": "the line gives both ways: re-export or --model_dir",
        "was exported with --no_repeat_ngram_size": "the line gives both ways: re-export or "
                                                    "--model_dir",
        "--beam_size must be >= 1, got {}": FLAG_VALUE,
        "--eos_until_met needs --model_dir": FLAG_PAIR,
    },
    "models/registry.py": {"unknown model": DAMAGED},
    "problem_spec.py": {
        "split of {} in {} is empty": "names the split, problem and --data_dir; datagen fills it",
    },
    "po/catalog_file.py": {"{}: cannot read ({})": OS_ERROR},
    "po/po_lexer.py": {
        "{}: {}": "FILE:LINE: msgfmt's own words for a catalog it refuses too (syntax, escape, "
                  "duplicate, charset)",
    },
    "po/header.py": {
        "the header's Plural-Forms {} cannot be read": "the line quotes the header's "
                                                       "Plural-Forms and msgfmt's reason",
    },
    "po/run.py": {
        "--{} is required": "names the missing flag",
        "give --model_dir or --export_dir": FLAG_PAIR,
        "--{} {} is not a folder": SAYS_FIX,
        "--{} must be >= 1, got {}": FLAG_VALUE,
        "--input and --output are required": "names the missing flags",
        "is not a regular file": SAYS_FIX,
        "--output {}: cannot write": OS_ERROR,
        "holds no catalog entry": "the line names the input; nothing is written",
    },
    "po/compose.py": {
        "msgfmt keeps rejecting the translations": "a fault of the tool's own checks; nothing "
                                                   "is written",
        "msgfmt rejects the output at line": "the line quotes msgfmt's reason and line",
    },
    "po/work_folder.py": {
        "is not a t2t-lite-po work folder": "the line says to move it away",
        "holds an unfinished run of another catalog": "the line names the difference and "
                                                      "--start_over",
    },
    "problems/gettext.py": {
        "needs --problem_param=target_lang=": SAYS_FIX,
        "bad domain pattern": "the regular expression's own error follows",
    },
    "problems/parsing.py": {
        "Penn Treebank's WSJ section folders": "the line says what raw_dir must hold; "
                                               "docs/parsing.md",
        "needs a silver-tree corpus": SAYS_FIX,
        "silver trees {} not found": SAYS_FIX,
    },
    "problems/text_files.py": {
        "translate_text_files needs training text": SAYS_FIX,
        "file not found": SAYS_FIX,
        "expected FILE.tsv or SOURCE,TARGET": SAYS_FIX,
    },
    "problems/wmt14.py": {
        "is not a directory": SAYS_FIX,
        "archive(s) (or their extracted files)": "the line names the missing archives",
        "download it from": "the line gives the URL to download from",
        "must be a positive number": FLAG_VALUE,
    },
    "registry.py": {
        "unknown problem": "the line lists the known problems (--registry_help too)",
        "bad parameters": "the problem's constructor says which parameter is wrong",
        "--problem_param must look like key=value": SAYS_FIX,
        "problem module file not found": SAYS_FIX,
        "cannot import problem module": "the import's own error follows",
    },
    "table3/findings.py": {"cannot check the paper's findings": TABLE3},
    "table3/mapping.py": {"unknown --scale": FLAG_VALUE},
    "table3/run.py": {
        "does not exist; run t2t-lite-datagen": "the line gives the datagen command",
        "no dev text": "the line gives the datagen command",
        "interrupted; re-run the same command": "the line says how to resume",
    },
    "table3/selection.py": {
        "unknown Table 3 row": "the line lists the known rows",
        "--rows selects no row": FLAG_VALUE,
    },
    "table3/table.py": {
        "cannot read": TABLE3,
        "is not a t2t-lite-table3 record": TABLE3,
        "holds files but no": TABLE3,
        "is a file; name a folder": SAYS_FIX,
        "give --train_steps or --train_minutes, not both": FLAG_PAIR,
        "--train_steps must be >= 1": FLAG_VALUE,
        "--train_minutes must be > 0": FLAG_VALUE,
        "--dev_sentences must be >= 0": FLAG_VALUE,
        "unknown --scale": FLAG_VALUE,
        "holds a Table 3 of another run": TABLE3,
    },
    "training/evaluation.py": {"unknown dev_metric": "only a Problem author's code gets here"},
    "training/lost_workers.py": {
        "went away at step": "docs/training.md covers lost workers and what the chief saved",
    },
    "training/parts.py": {
        "cannot change its dropout": "only a model registered by a user's code gets here",
    },
    "training/trainer.py": {
        "bad run setting": "the setting's own check says what is wrong",
        "--accumulate_steps must be >= 1": FLAG_VALUE,
    },
    "training/warm_start.py": {
        "made for decoding and serving, not a model_dir": "the line says what to give instead; "
                                                          "docs/training.md on fine-tuning",
        "is neither a model_dir nor a checkpoint": SAYS_FIX,
        "may differ from the parent's without it": FLAG_VALUE,
        "no such model setting": FLAG_VALUE,
        "to compare its model settings": DAMAGED,
        "differs from the one {} describes": "the line names the settings and the flag that "
                                             "accepts them; docs/training.md on fine-tuning",
        "its vocabulary {} is missing": DAMAGED,
        "is not the one {} the data is encoded with": "the line says how to encode the data "
                                                       "with the parent's vocabulary",
        "cannot warm start from": "the reader's own reason follows",
    },
    "viz/attention.py": {
        "unknown attention kinds": "the line lists the known kinds",
        "no attention weights given": "only code calling the library gets here",
        "no layers": "only code calling the library gets here",
        "expected [heads,": "only code calling the library gets here",
        "weights are not all finite": "a model whose weights are broken; the line says so",
    },
    "viz/sentence.py": {"sentence is empty after tokenization": SAYS_FIX},
}


def _parts(node):
    """The constant text of a message expression, HOLE where a value goes."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else HOLE for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _parts(node.left) + _parts(node.right)
    return HOLE


def code_messages():
    """[(module, line, template)] for every UserError(...) in the package, and every
    WriteFailed(...) (process_end's UserError for a failed write)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and node.args
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                        "UserError", "WriteFailed")):
                template = re.sub(HOLE + "+", HOLE, _parts(node.args[0]))
                found.append((path.relative_to(PACKAGE).as_posix(), node.lineno, template))
    return found


def page_quotes():
    """[(line number, message)] of the `error: ...` lines the page quotes; "..." is ELIDED."""
    quotes = []
    for number, line in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), start=1):
        texts = re.findall(r"`error: ([^`]+)`", line)
        block = re.match(r"^\s{4,}error: (.+)$", line)
        texts += [block.group(1)] if block else []
        for text in texts:
            text = re.sub(r"\.\.\.|…", ELIDED, text.strip())
            if text.replace(ELIDED, "").strip():  # `error: ...` alone names no message
                quotes.append((number, text))
    return quotes


def _letters(text):
    return len(re.sub(r"[\W_]", "", text.replace(HOLE, "")))


def matchable(template):
    """A template with almost no text of its own (`{}: {}`) would match any quote: such a
    message is composed elsewhere, and only ALLOWED can account for it."""
    return _letters(template) >= 6


def matches(template, quote):
    """Whether `quote` can be what `template` prints: a HOLE takes any text of the quote (an
    ELIDED part included), the rest is equal character for character; a quote ending in ELIDED
    may leave out the end of the message, if what it quotes holds most of the message's text."""
    if not matchable(template):
        return False
    trailing = quote.endswith(ELIDED)
    body = quote[:-1] if trailing else quote

    @functools.lru_cache(maxsize=None)
    def best(i, j):
        """The most template letters matched by template[i:] against body[j:], or None."""
        if j == len(body):
            if i == len(template) or all(c == HOLE for c in template[i:]):
                return 0
            return 0 if trailing else None
        if i == len(template):
            return None
        if template[i] == HOLE:
            options = [best(i + 1, j), best(i, j + 1)]
            options = [o for o in options if o is not None]
            return max(options) if options else None
        if body[j] == ELIDED and template.startswith("...", i):  # the message's own "..."
            rest = best(i + 3, j + 1)
            if rest is not None:
                return rest
        if template[i] != body[j]:
            return None
        rest = best(i + 1, j + 1)
        return None if rest is None else rest + template[i].isalnum()

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * (len(template) + len(quote)) + 100))
    try:
        found = best(0, 0)
    finally:
        sys.setrecursionlimit(limit)
    return found is not None and (not trailing or found >= 0.6 * _letters(template))


def shown(template):
    return template.replace(HOLE, "{}")


def allows(key, template):
    """An ALLOWED key names the messages whose text holds it; a key with almost no letters
    (`{}`) only the message that is exactly it."""
    return key == shown(template) or (_letters(key) >= 6 and key in shown(template))


@pytest.fixture(scope="module")
def messages():
    return code_messages()


@pytest.fixture(scope="module")
def quotes():
    return page_quotes()


def test_the_messages_are_found(messages, quotes):
    assert len(messages) > 150, "the scan of UserError(...) found too few messages"
    assert len(quotes) > 15, "the scan of the page's `error: ...` quotes found too few"


def test_every_message_is_quoted_or_allowed(messages, quotes):
    missing = []
    for module, line, template in messages:
        quoted = any(matches(template, quote) for _, quote in quotes)
        allowed = [key for key in ALLOWED.get(module, {}) if allows(key, template)]
        if not quoted and not allowed:
            missing.append(f"t2t_lite/{module}:{line}: {shown(template)!r}")
    assert not missing, ("messages neither quoted in docs/troubleshooting.md nor in ALLOWED "
                         "with a reason:\n" + "\n".join(missing))


def test_every_quote_is_a_message_the_code_prints(messages, quotes):
    stale = [f"docs/troubleshooting.md:{number}: error: {quote.replace(ELIDED, '...')}"
             for number, quote in quotes
             if not any(matches(template, quote) for _, _, template in messages)]
    assert not stale, ("the page quotes messages no UserError in t2t_lite/ prints (quote them "
                       "as the code words them today):\n" + "\n".join(stale))


def test_the_allowlist_is_current(messages, quotes):
    problems = []
    for module, entries in ALLOWED.items():
        templates = [t for m, _, t in messages if m == module]
        for key, reason in entries.items():
            hits = [t for t in templates if allows(key, t)]
            if not hits:
                problems.append(f"{module}: {key!r} matches no message there any more")
            elif all(any(matches(t, q) for _, q in quotes) for t in hits):
                problems.append(f"{module}: {key!r} is quoted on the page; drop it here")
            if not reason.strip():
                problems.append(f"{module}: {key!r} has no reason")
    assert not problems, "ALLOWED in tests/test_troubleshooting.py:\n" + "\n".join(problems)


def test_matching():
    template = f"{HOLE} is in use by another trainer ({HOLE}); stop it"
    assert matches(template, "runs/x is in use by another trainer (pid 1); stop it")
    assert matches(template, f"runs/x is in use by another trainer {ELIDED}")
    assert not matches(template, "runs/x is in use by another process (pid 1); stop it")
    assert not matches(HOLE, "anything")
    assert not matches(f"{HOLE} is not a model_dir", f"training diverged at step 1; {ELIDED}")
    assert matches(f"diverged at step {HOLE}: loss is {HOLE}; {HOLE}. {HOLE}",
                   f"diverged at step 5: loss is nan; {ELIDED}")
