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


def build(config, vocab_size, *, dtype_policy=None, name=None):
    """The model `config.model` names, built for `vocab_size` ids (weights created, not yet set).

    Args:
      dtype_policy: a Keras dtype policy ("bfloat16") the model is built under instead of the
        global one, which is left as it was (decoding/precision.py's bfloat16 twin).
      name: the Keras model's name; None: the class's own.
    """
    cls = model_class(config)
    kwargs = {} if name is None else {"name": name}
    if dtype_policy is None:
        return cls(config, int(vocab_size), **kwargs)
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype_policy)
    try:
        return cls(config, int(vocab_size), **kwargs)
    finally:
        keras.config.set_dtype_policy(previous)


def layout_of(config, vocab_size):
    """The variables of the model `config.model` names, from the config alone (layout.py)."""
    return model_class(config).layout(config, int(vocab_size))
