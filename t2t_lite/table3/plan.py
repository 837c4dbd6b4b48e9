"""What each row trains: its bindings at the table's scale, the configs they give (gin read once
per row), its size and cost (RowPlan); the precision every row of a table trains in."""
import dataclasses

from t2t_lite.table3.mapping import load_row, scale_bindings, varied_fields


@dataclasses.dataclass(frozen=True)
class RowPlan:
    """What one row trains: its set, bindings, effective configs, size and cost."""
    row: str
    bindings: list
    configs: tuple
    params: int
    cost: float  # training FLOPs of one 25-by-25-token sentence pair: the ETA's weights
    varied: dict = dataclasses.field(default_factory=dict)  # against base (plan_rows)


def plan_row(row, scale, gin_params, vocab_size):
    """The row's bindings (its scale's, then the user's) and the configs they give."""
    from t2t_lite.models.params import analytic_parameter_count
    from t2t_lite.training.flops import training_flops

    bindings = scale_bindings(row, scale) + list(gin_params)
    configs = load_row(row, bindings)
    return RowPlan(row, bindings, configs, analytic_parameter_count(configs[0], vocab_size),
                   training_flops(configs[0], vocab_size, 25, 25))


def plan_rows(plans, precision):
    """{row: plan} with every row in the table's `precision` ("auto" is decided once, for every
    row: its binding goes last, so that the bindings shown give the configs trained) and what it
    varies against base's plan."""

    def in_precision(plan):
        model, train, decode = plan.configs
        if train.mixed_precision == precision:
            return plan
        return dataclasses.replace(
            plan, bindings=plan.bindings + [f'TrainConfig.mixed_precision = "{precision}"'],
            configs=(model, dataclasses.replace(train, mixed_precision=precision), decode))

    plans = {row: in_precision(plan) for row, plan in plans.items()}
    base = plans["base"].configs
    return {row: dataclasses.replace(plan, varied=varied_fields(plan.configs, base))
            for row, plan in plans.items()}

