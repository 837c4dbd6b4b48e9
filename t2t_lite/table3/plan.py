"""What each row trains: its bindings at the table's scale and precision, the configs they give,
its size and cost (RowPlan); the precision every row of a table trains in."""
import dataclasses

from t2t_lite.table3.mapping import load_row, scale_bindings, varied_fields

@dataclasses.dataclass
class RowPlan:
    """What one row trains: its set, bindings, effective configs, size and cost."""
    row: str
    bindings: list
    configs: tuple
    varied: dict
    params: int
    cost: float  # training FLOPs of one 25-by-25-token sentence pair: the ETA's weights


def plan_row(row, scale, gin_params, precision, vocab_size, base_configs=None):
    """The row's bindings (its scale's, the user's, the table's precision) and what they give."""
    from t2t_lite.models.params import analytic_parameter_count
    from t2t_lite.training.flops import training_flops

    bindings = scale_bindings(row, scale) + list(gin_params)
    configs = load_row(row, bindings)
    if configs[1].mixed_precision != precision:  # "auto": decided once, for every row
        bindings.append(f'TrainConfig.mixed_precision = "{precision}"')
        configs = load_row(row, bindings)
    return RowPlan(row, bindings, configs, varied_fields(configs, base_configs or configs),
                   analytic_parameter_count(configs[0], vocab_size),
                   training_flops(configs[0], vocab_size, 25, 25))


def choose_precision(train_config):
    """(the Keras policy every row trains in, why): the set's, or "auto" decided once here."""
    if train_config.mixed_precision != "auto":
        return train_config.mixed_precision, "set by the hparams set / --gin_param"
    import tensorflow as tf

    from t2t_lite.training import precision as precision_lib

    has_gpu = bool(tf.config.list_logical_devices("GPU"))
    return precision_lib.choose("auto", has_gpu=has_gpu)
