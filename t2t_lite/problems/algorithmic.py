"""Generated sequence tasks for fast end-to-end checks: copy and reverse a string of symbols.

They use a fixed symbol vocabulary (`<name>.symbols.txt`: the reserved tokens, then "0".."n-1"),
so datagen needs no vocabulary learning. Parameters (e.g. `--problem_param=num_symbols=20`)
change the data, so keep each setting in its own data_dir.
"""
import random

from t2t_lite import registry
from t2t_lite.data import problem, tokenizers, vocab


class AlgorithmicProblem(problem.Problem):
    """Random symbol strings in, a deterministic function of them out."""

    def __init__(self, num_symbols=10, min_length=1, max_length=40, train_samples=100_000,
                 eval_samples=1000):
        """Args (--problem_param=NAME=VALUE):
          num_symbols: distinct symbols, "0" to "n-1".
          min_length: shortest string, in symbols.
          max_length: longest string, in symbols.
          train_samples: training pairs generated.
          eval_samples: pairs generated for dev, and as many for test.
        """
        self.num_symbols = int(num_symbols)
        self.min_length, self.max_length = int(min_length), int(max_length)
        self.split_sizes = {"train": int(train_samples), "dev": int(eval_samples),
                            "test": int(eval_samples)}

    def transform(self, symbols):
        raise NotImplementedError

    def generate_samples(self, split, tmp_dir):
        rng = random.Random(f"{self.name}-{split}")  # str seeds are stable across runs
        for _ in range(self.split_sizes[split]):
            length = rng.randint(self.min_length, self.max_length)
            symbols = [str(rng.randrange(self.num_symbols)) for _ in range(length)]
            yield " ".join(symbols), " ".join(self.transform(symbols))

    def vocab_filename(self):
        return f"{self.dataset_name}{tokenizers.SYMBOLS_SUFFIX}"

    def needs_vocab_sample(self):
        return False

    def build_vocab(self, data_dir, sample_path):
        vocab.write_symbol_vocab(self.vocab_path(data_dir),
                                 [str(i) for i in range(self.num_symbols)])


@registry.register_problem
class AlgorithmicCopy(AlgorithmicProblem):
    """Copy a random string of symbols (target = source)."""

    def transform(self, symbols):
        return symbols


@registry.register_problem
class AlgorithmicReverse(AlgorithmicProblem):
    """Reverse a random string of symbols."""

    def transform(self, symbols):
        return symbols[::-1]
