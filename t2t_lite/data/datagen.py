"""Datagen as one library call: resolve the problem (built-in, user module, params, gin), build
its vocabulary and shards, and return a human-readable report."""
from t2t_lite import hparams, registry

REPORT_KEYS = ("written", "read")


def build_problem(name, problem_modules=(), problem_params=(), gin_files=(), gin_params=()):
    for module in problem_modules or ():
        registry.import_problem_module(module)
    registry.list_problems()  # built-ins first, so gin knows their configurables
    hparams.bind(gin_files, gin_params)
    return registry.problem(name, **registry.parse_params(problem_params))


def format_report(problem, data_dir, manifests):
    lines = [f"{problem.name} -> {data_dir}"]
    for split, m in manifests.items():
        if m.get("already_complete"):
            lines.append(f"  {split}: already complete, {m['num_examples']} examples")
            continue
        skipped = {k.split(":", 1)[1]: v for k, v in m.items() if k.startswith("skipped:")}
        detail = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items())) or "none"
        resumed = (f", resumed after {m['resumed_from_shards']} finished shards"
                   if m.get("resumed_from_shards") else "")
        lines.append(f"  {split}: read {m['read']}, written {m['written']} "
                     f"({m['num_examples']} examples in {m['num_shards']} shards{resumed}), "
                     f"skipped {sum(skipped.values())} ({detail}) in {m['seconds']}s")
    lines.append(f"  vocabulary: {problem.vocab_path(data_dir)}")
    lines += [f"  held-out leak check: {line}" for line in problem.heldout_report(data_dir)]
    return "\n".join(lines)


def run(problem_name, data_dir, tmp_dir=None, **problem_options):
    """Generates all data for one problem; returns the report text."""
    problem = build_problem(problem_name, **problem_options)
    return format_report(problem, data_dir, problem.generate_data(data_dir, tmp_dir))
