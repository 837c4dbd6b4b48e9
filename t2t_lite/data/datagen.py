"""Datagen as one library call: a problem's vocabulary and shards, and a human-readable report.
(Making the problem from flags is above this layer: problems.build.)"""

REPORT_KEYS = ("written", "read")


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


def run(problem, data_dir, tmp_dir=None):
    """Generates all data for `problem` (a Problem); returns the report text."""
    return format_report(problem, data_dir, problem.generate_data(data_dir, tmp_dir))
