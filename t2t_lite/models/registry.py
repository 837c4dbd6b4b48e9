"""Which Keras model a ModelConfig builds: the one place that constructs model classes.

    model = models.build(model_config, vocab_size)

`ModelConfig.model` names the class ("transformer", the paper's). A variant registers itself with
`@register_model("my_variant")` and is chosen with `ModelConfig.model = "my_variant"` in a set; the
trainer, the model_dir loader and checks, the exporter, the parameter and FLOP counts need no
change. A model must offer what they use: `call({"inputs", "targets"})`, `encode`,
`init_decode_state`, `decode_step`, `attention_weights`, `config`, `vocab_size`, and the static
`layout(config, vocab_size)` describing its variables (layout.py; see Transformer).
"""
from t2t_lite.errors import UserError

_MODELS = {}


def register_model(name):
    """Class decorator: `ModelConfig.model = name` builds the decorated class."""
    def decorator(cls):
        _MODELS[name] = cls
        return cls
    return decorator


def _load_builtins():
    import t2t_lite.models.transformer  # noqa: F401  registers "transformer"


def model_class(config):
    """The class `config.model` names."""
    _load_builtins()
    cls = _MODELS.get(config.model)
    if cls is None:
        raise UserError(f"unknown model {config.model!r} (ModelConfig.model); known: "
                        f"{', '.join(sorted(_MODELS))}")
    return cls


def build(config, vocab_size):
    """The model `config.model` names, built for `vocab_size` ids (weights not yet created)."""
    return model_class(config)(config, int(vocab_size))


def layout_of(config, vocab_size):
    """The variables of the model `config.model` names, from the config alone (layout.py)."""
    return model_class(config).layout(config, int(vocab_size))
