"""The three configurables that gin hparam sets bind: model, training, decoding.

gin stays at the top: library code receives these plain dataclasses, never reads gin itself.
Defaults are the paper's base model (Vaswani et al. 2017, section 3 and 5); gin/base.gin restates
them so the set file alone describes a run.
"""
import dataclasses

import gin


@gin.configurable
@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture of the Transformer (paper section 3, Table 3 columns)."""

    model: str = "transformer"  # the registered model class (t2t_lite.models.registry)
    num_layers: int = 6  # N, for both encoder and decoder stacks
    d_model: int = 512  # width of embeddings and of every sub-layer's output
    d_ff: int = 2048  # inner size of the position-wise feed-forward network
    num_heads: int = 8  # h, attention heads per attention layer
    d_k: int = 0  # per-head query/key size; 0 means d_model // num_heads
    d_v: int = 0  # per-head value size; 0 means d_k's default, d_model // num_heads
    dropout: float = 0.1  # P_drop: sub-layer outputs and embeddings + positions
    attention_dropout: float = 0.0  # tensor2tensor's extra dropout on attention weights
    relu_dropout: float = 0.0  # tensor2tensor's extra dropout inside the FFN
    norm_position: str = "post"  # "post": LayerNorm(x + Dropout(f(x))) as the paper; "pre": t2t v2
    position_encoding: str = "sinusoid"  # or "learned" (Table 3 row E)
    sinusoid_layout: str = "interleaved"  # paper: sin at 2i, cos at 2i+1; "concat": t2t's [sin|cos]
    max_length: int = 256  # longest sequence the model embeds (learned positions, decode cache)
    attention_bias: bool = True  # biases on the Q/K/V/O projections
    layer_norm_epsilon: float = 1e-6  # added to the variance inside each LayerNorm

    def __post_init__(self):
        for name, low in (("num_layers", 1), ("d_model", 2), ("d_ff", 1), ("num_heads", 1),
                          ("d_k", 0), ("d_v", 0), ("max_length", 2)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}")
        if self.norm_position not in ("post", "pre"):
            raise ValueError(f"norm_position must be 'post' or 'pre', got {self.norm_position!r}")
        if self.position_encoding not in ("sinusoid", "learned"):
            raise ValueError(
                f"position_encoding must be 'sinusoid' or 'learned', got {self.position_encoding!r}")
        if self.sinusoid_layout not in ("interleaved", "concat"):
            raise ValueError(
                f"sinusoid_layout must be 'interleaved' or 'concat', got {self.sinusoid_layout!r}")
        if self.d_model % 2:
            raise ValueError(f"d_model must be even for sinusoids, got {self.d_model}")
        if not self.d_k and self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}; set d_k")
        for name in ("dropout", "attention_dropout", "relu_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")

    @property
    def key_dim(self) -> int:
        return self.d_k or self.d_model // self.num_heads

    @property
    def value_dim(self) -> int:
        return self.d_v or self.key_dim


# A model's dimensions: the ModelConfig fields that size it (Table 3's size columns), named once
# here. model_dir/limits.py bounds them, table3/mapping.py scales them for a row, and an engine's
# DecodeSettings (inference/translator.py) carries those its search memory grows with.
MODEL_DIMENSIONS = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v")


# How the averager picks checkpoints (model_dir/averaging.checkpoints_to_average).
AVERAGE_WINDOWS = ("last", "dev")


@gin.configurable
@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Optimisation and batching (paper section 5)."""

    learning_rate_schedule: str = "paper"  # paper: d^-0.5 min(s^-0.5, s w^-1.5); "t2t": rsqrt decay
    learning_rate_scale: float = 1.0  # multiplies the schedule (tensor2tensor's learning_rate)
    warmup_steps: int = 4000  # steps of the schedule's linear rise to its peak
    adam_beta1: float = 0.9  # Adam's decay of the gradient mean
    adam_beta2: float = 0.98  # Adam's decay of the squared gradient (tensor2tensor: 0.997)
    adam_epsilon: float = 1e-9  # Adam's epsilon
    label_smoothing: float = 0.1  # eps_ls, label smoothing of the training loss
    batch_tokens: int = 25000  # global source (and target) tokens per step, as the paper
    max_tokens_per_replica: int = 4096  # what one device holds; accumulation makes up the rest
    max_length: int = 256  # training pairs longer than this (in tokens) are dropped and counted
    train_steps: int = 100000  # steps to train to
    # How the run goes, not just what it learns: recorded in the model_dir's configs.json with
    # everything else. The trainer's flags of the same names override them for one run.
    train_minutes: float = 0.0  # wall-clock budget of the whole run, across resumes (0: none)
    log_every: int = 50  # steps between progress lines
    eval_every_steps: int = 0  # 0: evaluate whenever a checkpoint is saved
    eval_batches: int = 50  # dev batches for loss, perplexity, token accuracy
    bleu_sentences: int = 200  # dev sentences decoded for the dev metric (0: none)
    eval_beam_size: int = 1  # beam for dev decoding (1: one beam, cheap; 0: the DecodeConfig's)
    early_stopping_evals: int = 0  # stop after this many evaluations without improvement
    checkpoint_minutes: float = 10.0  # minutes between checkpoints
    checkpoint_steps: int = 0  # 0: time-based only
    keep_checkpoints: int = 20  # newest checkpoints kept in the model_dir, older ones deleted
    average_last: int = 5  # checkpoints averaged at the end (paper: 5 base, 20 big)
    # "last": the newest average_last (the paper); "dev": those, unless the dev evaluations say
    # the run stopped improving before them (model_dir/dev_history.py).
    average_window: str = "last"
    # "float32", "mixed_bfloat16", "mixed_float16", or "auto": bfloat16 where the CPU/GPU runs
    # it measurably faster, else float32 (precision.py).
    mixed_precision: str = "float32"
    # Budgeted runs (training/budget.py): fit warmup, decay, evaluation and the averaging window
    # to the steps that --train_minutes / --train_steps allow, measured on this machine. The peak
    # learning rate is the set's schedule at its warmup_steps.
    budget_schedule: bool = False
    budget_warmup_fraction: float = 0.2  # the first share of steps warming up to the peak
    budget_decay_fraction: float = 0.8  # the final share of steps decaying linearly to 0
    budget_average_fraction: float = 0.05  # the window the last `average_last` checkpoints span
    budget_eval_fraction: float = 0.05  # at most this share of the budget goes to dev evaluation
    # P_drop from the passes over the training data the plan makes (training/regularisation.py):
    # ((passes, P_drop), ...), ascending; the last pair whose passes the plan reaches wins.
    # Empty: the set's ModelConfig.dropout.
    budget_dropout: tuple = ()
    # Subword regularisation: each training pair is segmented anew, with this sampling rate, each
    # time it is read (BPE-dropout's merge-skip probability for a BPE vocabulary, the smoothing
    # exponent for a unigram one; SentencePiece vocabularies only). 0: the stored segmentation.
    subword_sampling: float = 0.0
    # The same from the planned passes, as budget_dropout: ((passes, rate), ...). Empty: the
    # fixed subword_sampling.
    budget_subword_sampling: tuple = ()
    # Label smoothing of the training loss from the planned passes: ((passes, eps), ...). Empty:
    # the fixed label_smoothing, which dev losses keep using either way (one yardstick a run).
    budget_label_smoothing: tuple = ()
    jit_compile: bool = False  # compile the training step with XLA
    seed: int = 1  # seeds initialisation, dropout and data shuffling

    def __post_init__(self):
        if self.learning_rate_schedule not in ("paper", "t2t"):
            raise ValueError(
                f"learning_rate_schedule must be 'paper' or 't2t', got {self.learning_rate_schedule!r}")
        if self.warmup_steps < 1:
            raise ValueError(f"warmup_steps must be >= 1, got {self.warmup_steps}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.mixed_precision not in ("auto", "float32", "mixed_bfloat16", "mixed_float16"):
            raise ValueError(f"mixed_precision must be auto, float32, mixed_bfloat16 or "
                             f"mixed_float16, got {self.mixed_precision!r}")
        for name in ("budget_warmup_fraction", "budget_average_fraction", "budget_eval_fraction",
                     "budget_decay_fraction"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.average_window not in AVERAGE_WINDOWS:
            raise ValueError(f"average_window must be one of {AVERAGE_WINDOWS}, got "
                             f"{self.average_window!r}")
        for name in ("budget_dropout", "budget_subword_sampling", "budget_label_smoothing"):
            rule = getattr(self, name)
            passes = [pair[0] for pair in rule]
            if (any(len(pair) != 2 or not 0.0 <= pair[1] < 1.0 for pair in rule)
                    or passes != sorted(passes)):
                raise ValueError(f"{name} must be ((passes, rate), ...) with passes ascending "
                                 f"and rates in [0, 1), got {rule}")
        if not 0.0 <= self.subword_sampling < 1.0:
            raise ValueError(f"subword_sampling must be in [0, 1), got {self.subword_sampling}")
        if self.train_minutes < 0:
            raise ValueError(f"train_minutes must be >= 0, got {self.train_minutes}")
        # Every dev evaluation has a loss: the best weights and early stopping fall back to it.
        for name in ("log_every", "eval_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("train_steps", "eval_every_steps", "bleu_sentences", "eval_beam_size",
                     "early_stopping_evals"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


# The step budget: an output is at most its source + 1 + this many tokens, whatever extra_length
# asks (the paper adds 50, its parsing runs 300). A model that rarely emits EOS would otherwise
# decode up to max_length steps (65,536) for every short line. decoding/translate.py clamps to
# it; model_dir/limits.py bounds a configured extra_length by it.
MAX_EXTRA_LENGTH = 1024

# The rule against loops' largest n (decoding/repeats.py): a loop of longer n-grams is one the
# rule no longer sees, and its check grows with n. model_dir/limits.py bounds the setting by it.
MAX_NO_REPEAT_NGRAM_SIZE = 32


@gin.configurable
@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    """Beam search settings (paper section 6.1; parsing uses its own in gin/parsing.gin)."""

    beam_size: int = 4  # hypotheses kept at each step (1: greedy)
    alpha: float = 0.6  # GNMT length penalty ((5 + len) / 6) ** alpha
    extra_length: int = 50  # max output length = input length + extra_length
    # The rule against loops: no hypothesis produces an n-gram of tokens it already holds, n
    # counted as fairseq, Hugging Face and CTranslate2 count it (decoding/repeats.py); 0: off.
    no_repeat_ngram_size: int = 0

    def __post_init__(self):
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {self.beam_size}")
        if self.no_repeat_ngram_size < 0:
            raise ValueError(f"no_repeat_ngram_size must be >= 0, got {self.no_repeat_ngram_size}")

    def settings(self, beam_size=None, alpha=None, extra_length=None, no_repeat_ngram_size=None):
        """{beam_size, alpha, extra_length, no_repeat_ngram_size}: each value given (a flag's),
        else this config's."""
        def given(value, default):
            return default if value is None else value

        return {"beam_size": int(given(beam_size, self.beam_size)),
                "alpha": float(given(alpha, self.alpha)),
                "extra_length": int(given(extra_length, self.extra_length)),
                "no_repeat_ngram_size": int(given(no_repeat_ngram_size,
                                                  self.no_repeat_ngram_size))}
