"""Given translations scored as t2t-lite-score does it, as one library call.

    stats = score_file(ScoreOptions(export_dir=E, pairs_file="pairs.tsv", output_file="scores"))
    print(stats.summary())

ScoreOptions holds the scorer's settings under its flags' names, and its defaults are the
flags'. `score_file` refuses settings that do not fit together before anything is read, opens
the pairs (a TSV file or stdin, or two parallel files: line_input.py) and the output (resumable
file or stream, resume.py), loads the model (model_source.py) and scores chunk by chunk
(scoring.score_stream). It returns the run's ScoreStats.
"""
import dataclasses
from typing import Optional

from t2t_lite import model_source
from t2t_lite.errors import UserError
from t2t_lite.inference import resume


@dataclasses.dataclass
class ScoreOptions:
    """t2t-lite-score's settings; each field is the flag of the same name (see its --help)."""
    model_dir: Optional[str] = None
    export_dir: Optional[str] = None
    checkpoint_path: Optional[str] = None
    pairs_file: Optional[str] = None  # None: stdin, unless source_file and target_file
    source_file: Optional[str] = None
    target_file: Optional[str] = None
    output_file: Optional[str] = None  # None: stdout
    alpha: Optional[float] = None  # None: the model's (an export's is fixed)
    batch_tokens: int = 4096
    chunk_lines: int = 10000
    pad_shorter: bool = False
    start_over: bool = False


def score_file(options):
    """Scores the pairs options name into options.output_file (see the module docstring); a
    killed run called again with the same options continues after its last finished chunk.
    Returns this run's scoring.ScoreStats. A bad flag, input or output is refused before
    TensorFlow loads (the model and the scoring module bring it)."""
    check_options(options)
    source = _input(options)
    with resume.open_output(options.output_file, flag="--output_file",
                            inputs=source.described_statuses()) as output:
        output.begin(_identity(options, source), start_over=options.start_over)
        scorer = model_source.ModelSource.from_options(options).load(alpha=options.alpha)
        from t2t_lite.inference import scoring

        return scoring.score_stream(scorer, source, output, options.chunk_lines,
                                    batch_tokens=options.batch_tokens)


def check_options(options):
    """UserError for settings that cannot work, named as the scorer's flags."""
    model_source.ModelSource.from_options(options).check()
    if options.export_dir and options.alpha is not None:
        raise UserError("--alpha needs --model_dir (an export's is fixed)")
    if options.alpha is not None:
        from t2t_lite.model_dir import limits as model_dir_limits

        model_dir_limits.check_bounds({"alpha": options.alpha}, "--alpha")
    for name in ("batch_tokens", "chunk_lines"):
        if getattr(options, name) < 1:
            raise UserError(f"--{name} must be >= 1, got {getattr(options, name)}")


def _input(options):
    from t2t_lite.inference import line_input

    if options.pairs_file and (options.source_file or options.target_file):
        raise UserError("give --pairs_file or --source_file with --target_file, not both")
    if bool(options.source_file) != bool(options.target_file):
        raise UserError("--source_file and --target_file go together")
    if options.source_file:
        return line_input.ParallelInput(options.source_file, options.target_file,
                                        pad_shorter=options.pad_shorter)
    if options.pad_shorter:
        raise UserError("--pad_shorter needs --source_file and --target_file")
    return line_input.open_input(options.pairs_file, flag="--pairs_file")


def _identity(options, source):
    """What a resumed run must match: the input, the model and the settings that change the
    scores or the output's chunks."""
    from t2t_lite.inference import line_input

    model = model_source.ModelSource.from_options(options).identity()
    return {"input": source.identity(), "model": model, "alpha": options.alpha,
            "batch_tokens": options.batch_tokens, "chunk_lines": options.chunk_lines,
            "pairs": isinstance(source, line_input.LineInput),
            "pad_shorter": options.pad_shorter}
