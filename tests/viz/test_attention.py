import json
import re

import numpy as np
import pytest
from matplotlib import image as mpimg

from t2t_lite.errors import UserError
from t2t_lite.viz import attention

SOURCE = ["▁The", "▁cat", "▁$5", "</s>"]
TARGET = ["▁Die", "▁Katze", "</s>"]


def softmax_weights(shape, seed=0, causal=False):
    logits = np.random.default_rng(seed).normal(size=shape) * 2
    if causal:
        logits = np.where(np.tril(np.ones(shape[-2:], bool)), logits, -np.inf)
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def sentence_weights(heads=2, layers=2):
    s, t = len(SOURCE), len(TARGET)
    return {
        "encoder_self": [softmax_weights((heads, s, s), i) for i in range(layers)],
        "decoder_self": [softmax_weights((heads, t, t), i, causal=True) for i in range(layers)],
        "encoder_decoder": [softmax_weights((heads, t, s), i) for i in range(layers)],
    }


@pytest.mark.slow
def test_one_png_per_kind_and_layer(tmp_path):
    paths = attention.write_pngs(sentence_weights(), SOURCE, TARGET, tmp_path)
    names = sorted(p.split("/")[-1] for p in paths)
    assert names == sorted(f"{kind}_layer{n}.png" for kind in attention.KINDS for n in (1, 2))
    picture = mpimg.imread(paths[0])
    assert picture.shape[0] > 200 and picture.shape[1] > 300
    assert picture[..., :3].std() > 0.05  # something is drawn, not a blank canvas


def test_figure_has_token_labels_titles_and_colour_bar():
    layer = softmax_weights((3, len(TARGET), len(SOURCE)))
    figure = attention.layer_figure("encoder_decoder", 1, 6, layer, TARGET, SOURCE)
    heatmaps = [ax for ax in figure.axes if ax.images]
    assert len(heatmaps) == 3
    first = heatmaps[0]
    assert [t.get_text() for t in first.get_xticklabels()] == ["▁The", "▁cat", r"▁\$5", "</s>"]
    assert [t.get_text() for t in first.get_yticklabels()] == TARGET
    assert first.get_title() == "head 1"
    assert first.get_ylabel() == "query (target)"
    assert figure.get_suptitle() == "Encoder-decoder attention, layer 2 of 6"
    colour_bars = [ax for ax in figure.axes if ax.get_ylabel() == "attention weight"]
    assert len(colour_bars) == 1
    # The picture shows the weights themselves: row 0 of head 1 is the first query's weights.
    np.testing.assert_allclose(first.images[0].get_array()[0], layer[0, 0], rtol=1e-6)


@pytest.mark.slow
def test_html_page_is_self_contained_and_carries_the_weights(tmp_path):
    weights = sentence_weights()
    result = attention.write_attention(weights, SOURCE, TARGET, tmp_path, title="a </script> b")
    page = open(result["html"], encoding="utf-8").read()
    assert len(result["pngs"]) == 6
    assert page.count('src="data:image/png;base64,') == 6
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from outside
    assert "a &lt;/script&gt; b" in page
    payload = re.search(r'<script type="application/json" id="attention-data">(.*?)</script>',
                        page, re.S).group(1)
    data = json.loads(payload)
    assert data["source"] == SOURCE and data["target"] == TARGET
    np.testing.assert_allclose(data["kinds"]["decoder_self"]["layers"][1],
                               weights["decoder_self"][1], atol=1e-4)


def test_subset_of_kinds_and_leading_batch_axis(tmp_path):
    layer = softmax_weights((1, 2, len(SOURCE), len(SOURCE)))  # [batch=1, H, S, S]
    paths = attention.write_pngs({"encoder_self": [layer]}, SOURCE, TARGET, tmp_path)
    assert [p.split("/")[-1] for p in paths] == ["encoder_self_layer1.png"]


@pytest.mark.parametrize("weights, message", [
    ({"encoder_self": [np.ones((2, 3, 3))]}, r"expected \[heads, 4, 4\]"),
    ({"encoder_decoder": [np.ones((2, 4, 3))]}, r"expected \[heads, 3, 4\]"),
    ({"encoder_self": [np.full((2, 4, 4), np.nan)]}, "not all finite"),
    ({"cross": [np.ones((2, 3, 4))]}, "unknown attention kinds"),
    ({"decoder_self": []}, "no layers"),
    ({}, "no attention weights"),
])
def test_bad_weights_are_user_errors(weights, message):
    with pytest.raises(UserError, match=message):
        attention.check_weights(weights, SOURCE, TARGET)
