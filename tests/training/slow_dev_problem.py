"""A --problem_module for tests/training/test_cluster_ends.py: algorithmic_reverse (its files),
whose dev text pairs come only after 120 s, so that a dev evaluation decoding sentences lasts
until the test has signalled the trainer (a signal's exception ends the wait sooner)."""
import time

from t2t_lite import registry
from t2t_lite.problems.algorithmic import AlgorithmicReverse


@registry.register_problem("slow_dev_reverse")
class SlowDevReverse(AlgorithmicReverse):

    @property
    def dataset_name(self):
        return "algorithmic_reverse" + super().dataset_name[len(self.name):]

    def eval_text_pairs(self, data_dir, split="dev"):
        print("slow dev pairs: waiting", flush=True)
        for _ in range(1200):
            time.sleep(0.1)
        return super().eval_text_pairs(data_dir, split)
