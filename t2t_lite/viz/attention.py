"""Attention pictures for one sentence pair, like the paper's Figures 3-5.

Input is what `Transformer.attention_weights(inputs, targets)` returns for one sentence:

    {"encoder_self":    [layer0, layer1, ...] each [H, S, S],
     "decoder_self":    [...]                 each [H, T, T],
     "encoder_decoder": [...]                 each [H, T, S]}

(rows are queries, columns keys; a leading batch axis of size 1 is accepted and dropped), plus
the source and target token strings. Any of the three kinds may be missing.

Outputs:
  - one PNG per kind and layer: a grid of heatmaps, one per head, tokens on both axes, one colour
    bar for the layer (`write_pngs`);
  - one self-contained HTML page (`write_html`): the same PNGs inlined as base64, plus the paper's
    line view (Figures 3-5: a token attends to the tokens it is joined to; line opacity = weight)
    drawn by a small inline script from inline JSON. No external URL, so it opens offline.
"""
import base64
import html
import io
import json
import math
import os

from t2t_lite.errors import UserError

try:
    import matplotlib
except ModuleNotFoundError as error:
    if not (error.name or "").startswith("matplotlib"):
        raise
    # An optional dependency: say which extra brings it, not a traceback.
    raise UserError("the attention plots need matplotlib, which is not installed: "
                    "pip install 't2t_lite[viz]' (in a checkout: pip install '.[viz]')") from None

matplotlib.use("Agg")  # files only; never opens a window, works on machines without a display
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# kind -> (title, query side, key side)
KINDS = {
    "encoder_self": ("Encoder self-attention", "source", "source"),
    "decoder_self": ("Decoder self-attention", "target", "target"),
    "encoder_decoder": ("Encoder-decoder attention", "target", "source"),
}

_HEADS_PER_ROW = 4


def check_weights(weights, source_tokens, target_tokens):
    """Validated copy of `weights`: kind -> list over layers of float arrays [H, queries, keys].

    Raises UserError for unknown kinds, empty layer lists, non-finite values, or shapes that do
    not match the token lists.
    """
    unknown = set(weights) - set(KINDS)
    if unknown:
        raise UserError(f"unknown attention kinds {sorted(unknown)}; expected some of {list(KINDS)}")
    if not weights:
        raise UserError("no attention weights given")
    lengths = {"source": len(source_tokens), "target": len(target_tokens)}
    checked = {}
    for kind, layers in weights.items():
        _, query_side, key_side = KINDS[kind]
        expected = (lengths[query_side], lengths[key_side])
        if len(layers) == 0:
            raise UserError(f"{kind}: no layers")
        checked[kind] = []
        for index, layer in enumerate(layers):
            array = np.asarray(layer, dtype=np.float32)
            if array.ndim == 4 and array.shape[0] == 1:
                array = array[0]
            if array.ndim != 3 or array.shape[1:] != expected:
                raise UserError(
                    f"{kind} layer {index}: shape {array.shape}, expected [heads, {expected[0]}, "
                    f"{expected[1]}] for {lengths['source']} source and {lengths['target']} "
                    "target tokens")
            if not np.all(np.isfinite(array)):
                raise UserError(f"{kind} layer {index}: weights are not all finite")
            checked[kind].append(array)
    return checked


def _label(token):
    # "$" would switch matplotlib to math mode; an empty token would be an invisible tick.
    return token.replace("$", r"\$") if token.strip() else repr(token)


def layer_figure(kind, layer_index, num_layers, layer_weights, query_tokens, key_tokens):
    """A Figure with one heatmap per head of `layer_weights` [H, Q, K] and a shared colour bar."""
    title, query_side, key_side = KINDS[kind]
    num_heads, num_queries, num_keys = layer_weights.shape
    cols = min(num_heads, _HEADS_PER_ROW)
    rows = math.ceil(num_heads / cols)
    # About a fifth of an inch per token keeps labels legible; bounded for very long sentences.
    cell_width = min(max(0.2 * num_keys + 0.8, 2.6), 9.0)
    cell_height = min(max(0.2 * num_queries + 0.8, 2.4), 9.0)
    font_size = 8 if max(num_queries, num_keys) <= 30 else 6
    figure = Figure(figsize=(cols * cell_width + 1.2, rows * cell_height + 0.6),
                    layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False)
    top = float(layer_weights.max()) or 1.0
    image = None
    for head, ax in enumerate(axes.flat):
        if head >= num_heads:
            ax.set_axis_off()
            continue
        image = ax.imshow(layer_weights[head], cmap="viridis", vmin=0.0, vmax=top,
                          aspect="auto", interpolation="nearest")
        ax.set_title(f"head {head + 1}", fontsize=font_size + 2)
        ax.set_xticks(range(num_keys), [_label(t) for t in key_tokens], rotation=90,
                      fontsize=font_size)
        ax.set_yticks(range(num_queries), [_label(t) for t in query_tokens], fontsize=font_size)
        ax.tick_params(length=0)
        if head % cols == 0:
            ax.set_ylabel(f"query ({query_side})", fontsize=font_size + 1)
        if head // cols == rows - 1 or head + cols >= num_heads:
            ax.set_xlabel(f"key ({key_side})", fontsize=font_size + 1)
    colour_bar = figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8)
    colour_bar.set_label("attention weight", fontsize=font_size + 1)
    figure.suptitle(f"{title}, layer {layer_index + 1} of {num_layers}", fontsize=font_size + 4)
    return figure


def _png_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _layer_pngs(checked, source_tokens, target_tokens):
    """Yields (kind, layer index, PNG bytes) for every layer of every kind given."""
    tokens = {"source": source_tokens, "target": target_tokens}
    for kind, layers in checked.items():
        _, query_side, key_side = KINDS[kind]
        for index, layer in enumerate(layers):
            figure = layer_figure(kind, index, len(layers), layer, tokens[query_side],
                                  tokens[key_side])
            yield kind, index, _png_bytes(figure)


def png_name(kind, layer_index):
    return f"{kind}_layer{layer_index + 1}.png"


def _save_pngs(rendered, output_dir):
    os.makedirs(output_dir, exist_ok=True)
    paths = []
    for kind, index, png in rendered:
        path = os.path.join(output_dir, png_name(kind, index))
        with open(path, "wb") as f:
            f.write(png)
        paths.append(path)
    return paths


def _page(checked, rendered, source_tokens, target_tokens, title):
    data = {
        "source": list(source_tokens),
        "target": list(target_tokens),
        "kinds": {kind: {"title": KINDS[kind][0], "query": KINDS[kind][1], "key": KINDS[kind][2],
                         "layers": [np.round(layer, 4).tolist() for layer in layers]}
                  for kind, layers in checked.items()},
    }
    sections = []
    for kind, index, png in rendered:
        caption = f"{KINDS[kind][0]}, layer {index + 1}"
        sections.append(
            f'<figure><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    return (_PAGE
            .replace("@TITLE@", html.escape(title))
            # "</" inside a script element would end it early; JSON allows the escaped form.
            .replace("@DATA@", json.dumps(data).replace("</", "<\\/"))
            .replace("@HEATMAPS@", "\n".join(sections)))


def _save_page(page, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def write_pngs(weights, source_tokens, target_tokens, output_dir):
    """Writes one PNG per kind and layer into output_dir; returns their paths."""
    checked = check_weights(weights, source_tokens, target_tokens)
    return _save_pngs(list(_layer_pngs(checked, source_tokens, target_tokens)), output_dir)


def write_html(weights, source_tokens, target_tokens, path, title="Attention"):
    """Writes a self-contained HTML page with the line view and every layer's heatmaps."""
    checked = check_weights(weights, source_tokens, target_tokens)
    rendered = list(_layer_pngs(checked, source_tokens, target_tokens))
    return _save_page(_page(checked, rendered, source_tokens, target_tokens, title), path)


def write_attention(weights, source_tokens, target_tokens, output_dir, title="Attention"):
    """PNGs and attention.html in output_dir, each figure drawn once.

    Returns {"pngs": [paths], "html": path}.
    """
    checked = check_weights(weights, source_tokens, target_tokens)
    rendered = list(_layer_pngs(checked, source_tokens, target_tokens))
    page = _page(checked, rendered, source_tokens, target_tokens, title)
    return {"pngs": _save_pngs(rendered, output_dir),
            "html": _save_page(page, os.path.join(output_dir, "attention.html"))}


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
.controls label { margin-right: 1.2em; }
.heads label { margin-right: 0.6em; }
svg text { font-size: 13px; cursor: pointer; }
svg text.dim { fill: #999; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; }
</style></head>
<body>
<h1>@TITLE@</h1>
<h2>Line view</h2>
<p>Each line joins a query token (left) to a key token (right); its opacity is the attention
weight, its colour the head. Hover a token to show only its lines.</p>
<div class="controls">
<label>Attention <select id="kind"></select></label>
<label>Layer <select id="layer"></select></label>
</div>
<div class="heads" id="heads"></div>
<svg id="lines" xmlns="http://www.w3.org/2000/svg"></svg>
<h2>Heatmaps</h2>
<p>Rows are queries, columns keys; one panel per head.</p>
@HEATMAPS@
<script type="application/json" id="attention-data">@DATA@</script>
<script>
(function () {
  const data = JSON.parse(document.getElementById("attention-data").textContent);
  const colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const kindSelect = document.getElementById("kind");
  const layerSelect = document.getElementById("layer");
  const headsDiv = document.getElementById("heads");
  const svg = document.getElementById("lines");
  const NS = "http://www.w3.org/2000/svg";

  function option(select, value, text) {
    const o = document.createElement("option");
    o.value = value; o.textContent = text; select.appendChild(o);
  }
  Object.keys(data.kinds).forEach(k => option(kindSelect, k, data.kinds[k].title));

  function kind() { return data.kinds[kindSelect.value]; }
  function layer() { return kind().layers[Number(layerSelect.value)]; }

  function fillLayers() {
    layerSelect.innerHTML = "";
    kind().layers.forEach((_, i) => option(layerSelect, i, String(i + 1)));
    layerSelect.value = String(kind().layers.length - 1);
    fillHeads();
  }
  function fillHeads() {
    headsDiv.innerHTML = "Heads ";
    layer().forEach((_, h) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox"; box.checked = true; box.value = h; box.onchange = draw;
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + (h + 1)));
      label.style.color = colours[h % colours.length];
      headsDiv.appendChild(label);
    });
    draw();
  }
  // Hovering a token shows only its lines (no redraw, so the hovered element stays put).
  function highlight(side, index) {
    svg.querySelectorAll("line").forEach(line => {
      const shown = side === null || Number(line.dataset[side]) === index;
      line.style.display = shown ? "" : "none";
    });
    svg.querySelectorAll("text").forEach(t => {
      const dim = side !== null && !(t.dataset.side === side && Number(t.dataset.index) === index);
      t.setAttribute("class", dim ? "dim" : "");
    });
  }
  function text(x, y, s, anchor, side, index) {
    const t = document.createElementNS(NS, "text");
    t.setAttribute("x", x); t.setAttribute("y", y); t.setAttribute("text-anchor", anchor);
    t.setAttribute("dominant-baseline", "middle");
    t.dataset.side = side; t.dataset.index = index;
    t.textContent = s;
    t.onmouseenter = () => highlight(side, index);
    t.onmouseleave = () => highlight(null, null);
    svg.appendChild(t);
  }
  function draw() {
    const queries = data[kind().query], keys = data[kind().key];
    const heads = Array.from(headsDiv.querySelectorAll("input:checked")).map(b => Number(b.value));
    const step = 22, top = 20, left = 170, right = 470;
    svg.innerHTML = "";
    svg.setAttribute("width", 640);
    svg.setAttribute("height", top * 2 + step * Math.max(queries.length, keys.length));
    heads.forEach(h => {
      layer()[h].forEach((row, q) => row.forEach((w, k) => {
        if (w < 0.01) return;  // thousands of invisible lines would only slow the page
        const line = document.createElementNS(NS, "line");
        line.setAttribute("x1", left + 6); line.setAttribute("y1", top + q * step);
        line.setAttribute("x2", right - 6); line.setAttribute("y2", top + k * step);
        line.setAttribute("stroke", colours[h % colours.length]);
        line.setAttribute("stroke-width", 2);
        line.setAttribute("stroke-opacity", w);
        line.dataset.q = q; line.dataset.k = k;
        svg.appendChild(line);
      }));
    });
    queries.forEach((s, i) => text(left, top + i * step, s, "end", "q", i));
    keys.forEach((s, i) => text(right, top + i * step, s, "start", "k", i));
  }
  kindSelect.onchange = fillLayers;
  layerSelect.onchange = fillHeads;
  fillLayers();
})();
</script>
</body></html>
"""
