"""Parameter counts: analytic == built for every set; close to the paper's Table 3 column."""
import pytest

from t2t_lite import hparams
from t2t_lite.models.params import analytic_parameter_count, built_parameter_count

# Table 3's "params x 10^6" column (EN-DE, ~37k shared vocabulary); blank rows share base's 65.
PAPER_PARAMS_MILLIONS = {
    "base": 65, "base_prenorm": 65, "big": 213,
    "table3/A_heads1_dk512": 65, "table3/A_heads4_dk128": 65, "table3/A_heads16_dk32": 65,
    "table3/A_heads32_dk16": 65,
    "table3/B_dk16": 58, "table3/B_dk32": 60,
    "table3/C_layers2": 36, "table3/C_layers4": 50, "table3/C_layers8": 80,
    "table3/C_dmodel256_dk32": 28, "table3/C_dmodel1024_dk128": 168,
    "table3/C_dff1024": 53, "table3/C_dff4096": 90,
    "table3/D_dropout0": 65, "table3/D_dropout02": 65, "table3/D_smoothing0": 65,
    "table3/D_smoothing02": 65, "table3/E_learned_positions": 65,
}


def test_every_table3_row_has_a_set():
    sets = set(hparams.list_hparams_sets())
    assert set(PAPER_PARAMS_MILLIONS) <= sets


@pytest.mark.parametrize("name", sorted(PAPER_PARAMS_MILLIONS))
def test_within_seven_percent_of_the_paper(name):
    count = analytic_parameter_count(hparams.load(name)[0], 37000)
    paper = PAPER_PARAMS_MILLIONS[name] * 1e6
    assert abs(count - paper) / paper <= 0.07, (name, count)


def test_base_and_big_exact_counts():
    # Term by term at vocab 37,000 (attention projections without biases, as the paper):
    # base encoder layer: 4 x 512^2 attention + (2 x 512 x 2048 + 2048 + 512) FFN + 2 x 1,024
    # layer norm = 3,150,336; decoder layer: 8 x 512^2 + 2,099,712 + 3 x 1,024 = 4,199,936;
    # 6 x (3,150,336 + 4,199,936) + 37,000 x 512 shared embedding = 63,045,632.
    assert analytic_parameter_count(hparams.load("base")[0], 37000) == 63_045_632
    assert analytic_parameter_count(hparams.load("big")[0], 37000) == 214_171_648


def test_base_built_at_paper_vocabulary_matches_analytic_count():
    config = hparams.load("base")[0]
    assert built_parameter_count(config, 37000) == 63_045_632


@pytest.mark.slow
@pytest.mark.parametrize("name", hparams.list_hparams_sets())
def test_every_set_parses_builds_and_counts_exactly(name):
    model_config, train_config, decode_config = hparams.load(name)
    assert train_config.batch_tokens > 0 and decode_config.beam_size >= 1
    vocab = 1000  # small vocabulary keeps building every set cheap; the layers are full size
    assert built_parameter_count(model_config, vocab) == analytic_parameter_count(model_config,
                                                                                  vocab)
