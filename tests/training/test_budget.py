"""Budgeted runs: the plan fitted to a measured step rate, its schedule, and a real tiny run."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training import budget



def rates(schedule, start, stop):
    """[float(schedule(i)) for i in range(start, stop)], in one call: the schedule's ops are
    elementwise, so each step's rate is the one a scalar call gives."""
    return [float(rate) for rate in schedule(tf.range(start, stop)).numpy()]

def test_plan_fits_the_steps_the_measured_rate_allows():
    # 20 minutes left at step 12, 2.7 s/step: 95% of the budget for training, 97% of that for
    # steps -> 409 + 12 steps fit; uncapped, the plan takes them.
    plan = budget.plan(12, 1200, 2.7, max_steps=5000, average_last=5, eval_seconds=15)
    assert plan.steps_that_fit == 12 + int(1200 * 0.95 * 0.97 / 2.7) == 421
    assert plan.total_steps == 421
    assert plan.warmup_steps == round(0.2 * 421)
    # Five checkpoints over the last 5% (21 steps -> every 4), the last at the final step.
    assert plan.average_steps == (405, 409, 413, 417, 421)
    # 5% of 1200 s pays for 4 evaluations of 15 s.
    assert plan.eval_every == -(-(421 - 12) // 4)


def test_plan_is_capped_by_train_steps_and_keeps_a_resumed_warmup():
    fast = budget.plan(12, 1200, 1.0, max_steps=400, average_last=5)
    assert (fast.total_steps, fast.warmup_steps, fast.steps_that_fit) == (400, 80, 12 + 1105)
    # Resumed at step 400 with 8 more minutes: the warmup already done stays, the run grows.
    resumed = budget.plan(400, 480, 1.0, max_steps=5000, average_last=5, warmup_steps=80)
    assert resumed.warmup_steps == 80 and resumed.total_steps == 400 + int(480 * 0.95 * 0.97)
    assert all(s > 400 for s in resumed.average_steps)


def test_a_shortened_plan_fits_its_averaging_window_into_the_steps_left():
    """A machine that slowed down re-plans a shorter run: the window must not start behind the
    current step (its first checkpoints would never be written)."""
    normal = budget.plan(2300, 300, 1.0, max_steps=100000, average_last=3, average_fraction=0.05)
    assert normal.average_steps[0] > 2300 and len(normal.average_steps) == 3
    short = budget.plan(2380, 60, 1.0, max_steps=100000, average_last=3, average_fraction=0.05)
    assert len(short.average_steps) == 3 and short.average_steps[0] > 2380
    assert short.average_steps[-1] == short.total_steps
    # Fewer steps left than checkpoints: as many as there are steps.
    tiny = budget.plan(100, 2, 1.0, max_steps=100000, average_last=5)
    assert tiny.average_steps == tuple(range(101, tiny.total_steps + 1))


def test_a_finished_run_plans_no_more_steps():
    """A finished run that is run again trains no step past its end."""
    done = budget.plan(300, None, 0.0, max_steps=300, average_last=5)
    assert done.total_steps == 300 and done.average_steps == ()
    out_of_time = budget.plan(120, 0.0, 1.0, max_steps=5000, average_last=5)
    assert out_of_time.total_steps == 120


def test_plan_without_a_time_budget_uses_the_step_cap():
    plan = budget.plan(0, None, 0.0, max_steps=300, average_last=5)
    assert (plan.total_steps, plan.warmup_steps, plan.steps_that_fit) == (300, 60, None)
    assert plan.average_steps == (288, 291, 294, 297, 300)  # 15-step window, every 3


def test_a_step_cap_below_the_budget_sizes_evaluation_to_the_planned_steps():
    """--train_steps=400 --train_minutes=60 on a machine that does 400 steps in ~7 minutes:
    evaluation is 5% of the run that is planned, not of the 60 minutes. Sized on the minutes,
    the interval shrank as the run went on (every 5 steps, then 2, then each step)."""
    # Uncapped: the run is the whole budget, as before.
    assert budget.plan(12, 1200, 2.7, 5000, 5, eval_seconds=15).eval_every == 103
    # Capped: 388 steps of 1 s, and 5% of the run they make (388 s / (0.95 * 0.97)) pays for
    # 10 evaluations of 2 s (the minutes would have paid for 89).
    first = budget.plan(12, 3600, 1.0, max_steps=400, average_last=5, eval_seconds=2.0)
    assert first.total_steps == 400 and first.eval_every == -(-388 // 10)
    # Later in the same run: the interval does not shrink as the steps left get fewer (near the
    # end, one interval is what is left of the run).
    for step in (100, 200, 300, 380):
        later = budget.plan(step, 3600 - 1.05 * step, 1.0, max_steps=400, average_last=5,
                            eval_seconds=2.0)
        assert later.eval_every >= min(first.eval_every - 1, 400 - step), (step, later)


def _capped_run(monkeypatch, eval_seconds):
    """The BudgetPlanner hook over a whole 400-step run capped under 60 minutes, on a fake clock
    (1 s a step, `eval_seconds` an evaluation): the steps evaluated, and the seconds taken."""
    import gin

    from t2t_lite.config import TrainConfig
    from t2t_lite.training.hooks import TrainState

    gin.clear_config()  # TrainConfig's defaults, not another test's bindings
    clock = [0.0]
    monkeypatch.setattr(budget.time, "monotonic", lambda: clock[0])
    planner = budget.BudgetPlanner(
        TrainConfig(budget_schedule=True), 400, tf.Variable(80, dtype=tf.int64),
        tf.Variable(400, dtype=tf.int64), peak=1e-3, log_every=10, eval_batches=5,
        bleu_sentences=0)
    state = TrainState(None, None, None, step=0, total_steps=400, deadline=3600.0, start=0.0)
    planner.begin(state)
    evaluations = []
    while state.step < state.total_steps:
        clock[0] += 1.0
        state.next_step(state.step + 1, seconds=1.0)
        planner.after_step(state)
        if state.evaluation_due:  # as the Evaluation hook does
            clock[0] += eval_seconds
            state.evaluation_seconds.append(eval_seconds)
            evaluations.append(state.step)
    assert state.step == 400
    return evaluations, clock[0]


def test_the_planner_keeps_a_capped_runs_evaluation_interval(monkeypatch):
    """Evaluations stay evenly spaced and cost about budget_eval_fraction of the run, however
    many minutes are left over."""
    evaluations, seconds = _capped_run(monkeypatch, eval_seconds=2.0)
    intervals = np.diff(evaluations)
    assert 5 <= len(evaluations) <= 12, evaluations
    assert intervals.min() >= 0.75 * intervals.max(), evaluations
    assert len(evaluations) * 2.0 <= 0.06 * seconds


def test_the_interval_follows_the_timed_evaluations_without_a_new_plan_line(monkeypatch, capsys):
    """The first plan guesses an evaluation's cost (1.7 s here); once one is timed (0.5 s) the
    interval shrinks, silently: the run's length (the 400-step cap) did not move, so the plan
    line is not printed again."""
    import re

    evaluations, _ = _capped_run(monkeypatch, eval_seconds=0.5)
    printed = [int(n) for n in re.findall(r"dev evaluation every (\d+) steps",
                                          capsys.readouterr().out)]
    kept = np.median(np.diff(evaluations[1:]))
    assert len(printed) == 1 and printed[0] > 2 * kept, (printed, evaluations)  # the guess


def _timed_run(monkeypatch, seconds_at, minutes=60, max_steps=100000):
    """The BudgetPlanner hook over a run whose step `s` takes seconds_at(s) on a fake clock
    (no evaluations): the planner and the lines it printed."""
    import gin

    from t2t_lite.config import TrainConfig
    from t2t_lite.training.hooks import TrainState

    gin.clear_config()
    clock = [0.0]
    monkeypatch.setattr(budget.time, "monotonic", lambda: clock[0])
    planner = budget.BudgetPlanner(
        TrainConfig(budget_schedule=True), max_steps, tf.Variable(1, dtype=tf.int64),
        tf.Variable(max_steps, dtype=tf.int64), peak=1e-3, log_every=10, eval_batches=5,
        bleu_sentences=0)
    state = TrainState(None, None, None, step=0, total_steps=max_steps,
                       deadline=minutes * 60.0, start=0.0)
    planner.begin(state)
    replans = 0
    while state.step < state.total_steps and clock[0] < state.deadline:
        seconds = seconds_at(state.step + 1)
        clock[0] += seconds
        state.next_step(state.step + 1, seconds=seconds)
        before = planner.plan
        planner.after_step(state)
        replans += planner.plan is not before
    return planner, replans


def test_a_replan_is_printed_when_it_changes_the_plan_materially_and_says_why(monkeypatch,
                                                                                capsys):
    """A machine slowing down 2% at every progress report re-plans each time; the plan is
    printed again only when its length moved more than 10%, naming the step rate's fall, and
    the rate falling below half the first measurement is warned about once."""
    import re

    # 1 s a step, then from step 100 each 10 steps 2% slower (down to a third of the rate).
    planner, replans = _timed_run(
        monkeypatch, lambda step: 1.0 if step < 100 else min(3.0, 1.02 ** ((step - 100) // 10)))
    out = capsys.readouterr().out
    printed = re.findall(r"^plan: (\d+) steps .*$", out, flags=re.M)
    assert replans > 20 and 2 <= len(printed) <= replans // 3, (replans, out)
    assert out.count("(re-planned: ") == len(printed) - 1, out  # every re-print says why
    falls = re.findall(r"\(re-planned: the step rate fell (\d+)%\)$", out, flags=re.M)
    assert len(falls) >= len(printed) - 2 and all(int(r) >= 5 for r in falls), out
    lines = [line for line in out.splitlines() if re.match(r"plan: \d+", line)]
    for before, after in zip(lines, lines[1:]):  # each re-print moved the length > 10%
        a, b = (int(re.match(r"plan: (\d+)", line).group(1)) for line in (before, after))
        assert abs(b - a) > 0.1 * a, (before, after)
    warnings = re.findall(r"^warning: the step rate fell below half the first measurement "
                          r"\(([\d.]+) s/step against 1.00\)", out, flags=re.M)
    assert len(warnings) == 1 and float(warnings[0]) > 2.0, out


def test_a_steady_or_noisy_rate_prints_the_plan_once(monkeypatch, capsys):
    """Rate swings of a few percent (a busy machine) re-plan silently: no re-print for the rate,
    no warning."""
    planner, replans = _timed_run(monkeypatch, lambda step: (1.0, 1.05, 0.97, 1.03)[step % 4],
                                  minutes=20)
    out = capsys.readouterr().out
    import re

    printed = re.findall(r"^plan: \d+ steps", out, flags=re.M)
    assert replans > 10 and len(printed) == 1, out
    assert "step rate fell" not in out and "step rate rose" not in out and "warning" not in out
    assert budget.plan_change(planner.plan, planner.plan) is None


def test_a_replan_that_moves_only_the_dev_evaluation_interval_is_not_printed():
    """The plan line is printed again only when the run's length moves by more than 10%: the
    interval alone (322 -> 607 -> 44 -> 31 in one run) tells the user nothing to act on."""
    import dataclasses

    shown = budget.BudgetPlan(total_steps=3000, warmup_steps=600, average_steps=(3000,),
                              eval_every=322, seconds_per_step=0.4, steps_that_fit=3000)
    for eval_every in (607, 44, 31):
        assert budget.plan_change(shown, dataclasses.replace(shown, eval_every=eval_every)) is None
    assert budget.plan_change(shown, dataclasses.replace(shown, total_steps=3290)) is None
    assert budget.plan_change(shown, dataclasses.replace(
        shown, total_steps=2600, seconds_per_step=0.46, eval_every=31)) == "the step rate fell 13%"
    assert budget.plan_change(shown, dataclasses.replace(shown, total_steps=3400)) == (
        "3400 steps instead of 3000")


def test_budget_schedule_warms_up_then_decays_linearly_to_zero():
    warmup, total = tf.Variable(10, dtype=tf.int64), tf.Variable(100, dtype=tf.int64)
    schedule = budget.BudgetSchedule(2e-3, warmup, total, decay_fraction=0.9)
    lr = rates(schedule, 0, 100)  # optimizer iterations 0..99
    assert lr[0] == pytest.approx(2e-4)
    assert lr[9] == pytest.approx(2e-3)  # step 10: the peak
    assert max(lr) == pytest.approx(2e-3)
    assert lr[54] == pytest.approx(2e-3 * (101 - 55) / 91)
    assert 0 < lr[99] < 1e-4  # the last step still moves, barely
    assert np.all(np.diff(lr[10:]) < 0)
    # A new plan changes the schedule of an optimizer already built.
    total.assign(200)
    assert float(schedule(99)) > 2e-3 * 0.4


def test_budget_schedule_holds_the_peak_until_the_decay_share():
    schedule = budget.BudgetSchedule(3e-3, tf.Variable(60, dtype=tf.int64),
                                     tf.Variable(300, dtype=tf.int64), decay_fraction=0.4)
    lr = rates(schedule, 0, 300)
    assert lr[59] == pytest.approx(3e-3) and lr[179] == pytest.approx(3e-3)  # steps 60..180
    assert lr[239] == pytest.approx(3e-3 * (301 - 240) / 121)
    assert 0 < lr[299] < 3e-5
    assert budget.plan(0, None, 0.0, 300, 5, decay_fraction=0.4).decay_start == 180


def _resumed(step, max_steps, warmup=20, total=100):
    """A 100-step plan's schedule and a planner resumed at `step` with a `max_steps` cap and no
    deadline: (schedule, its lr before the resume at each optimizer iteration, kept)."""
    import gin

    from t2t_lite.config import TrainConfig
    from t2t_lite.training.hooks import TrainState

    gin.clear_config()
    config = TrainConfig(budget_schedule=True)
    warmup, total = tf.Variable(warmup, dtype=tf.int64), tf.Variable(total, dtype=tf.int64)
    anchor = (tf.Variable(0, dtype=tf.int64), tf.Variable(1.0, dtype=tf.float32))
    schedule = budget.BudgetSchedule(1e-3, warmup, total, config.budget_decay_fraction, *anchor)
    before = rates(schedule, 0, max_steps)
    kept = []
    planner = budget.BudgetPlanner(config, max_steps, warmup, total, peak=1e-3, log_every=10,
                                   eval_batches=1, bleu_sentences=0,
                                   anchor=(*anchor, lambda: kept.append(True)))
    planner.begin(TrainState(None, None, None, step=step, total_steps=max_steps, deadline=None,
                             start=0.0))
    return schedule, before, kept, planner


def test_a_run_resumed_inside_its_decay_goes_on_from_its_learning_rate(capsys):
    """Resumed at step 60 of 100 (decaying since step 20) with room for 200 steps: the plan
    covers the steps left, the learning rate going on from the last step's in a line to 0 at
    step 200, never back up towards the peak (the set's plan over 200 steps would be at 87% of
    it there)."""
    schedule, before, kept, planner = _resumed(60, 200)
    assert planner.plan.total_steps == 200 and kept == [True]
    lr = rates(schedule, 59, 200)  # iteration 59: the last step trained
    assert lr[0] == pytest.approx(before[59], rel=1e-5)
    assert max(lr[1:]) < before[59] and np.all(np.diff(lr) < 0) and 0 < lr[-1] < 1e-5
    # The line through (step 60, its rate) to 0 at step 201 (the schedule's last step moves).
    assert lr[41] == pytest.approx(before[59] * (201 - 101) / (201 - 60), rel=1e-4)
    assert "the decay going on from lr 5.06e-04 at step 60" in capsys.readouterr().out
    # Without more steps the resumed run keeps the schedule it had.
    schedule, before, _, _ = _resumed(60, 100)
    assert rates(schedule, 0, 100) == pytest.approx(before, rel=1e-5)


def test_a_run_resumed_before_its_decay_keeps_the_peak_longer():
    """Resumed at step 25 of 150 (decay from step 30): no anchor, the longer plan holds the
    peak longer, as a fresh plan over the same steps would."""
    schedule, before, kept, planner = _resumed(25, 200, warmup=20, total=150)
    assert kept == [] and planner.resumed_decay is None
    assert float(schedule(24)) == pytest.approx(1e-3) == before[24]
    assert float(schedule(38)) == pytest.approx(1e-3) and before[38] < 1e-3
    assert float(schedule(199)) < 1e-5


@pytest.mark.slow
def test_budgeted_trainer_plans_from_its_step_rate_and_replans_when_resumed(tmp_path):
    """A real tiny run under --train_minutes: the plan is printed, the run stops at the planned
    step with the averaging checkpoints written, and a re-run with a larger cumulative budget
    resumes and plans a longer run."""
    import os
    import re
    import subprocess
    import sys

    from t2t_lite import problems
    from t2t_lite.data import datagen

    params = ["max_length=8", "train_samples=5000", "eval_samples=100"]
    data_dir, model_dir = tmp_path / "data", tmp_path / "model"
    datagen.run(problems.build("algorithmic_reverse", params), str(data_dir))
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
               f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--hparams_set=tiny",
               "--bleu_sentences=0", "--eval_batches=1", "--log_every=20", "--train_steps=100000",
               *[f"--problem_param={p}" for p in params],
               "--gin_param=TrainConfig.budget_schedule = True",
               "--gin_param=TrainConfig.average_last = 3",
               "--gin_param=TrainConfig.checkpoint_minutes = 0",
               "--gin_param=TrainConfig.batch_tokens = 512",
               "--gin_param=TrainConfig.max_tokens_per_replica = 512"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")

    def run(minutes):
        out = subprocess.run(command + [f"--train_minutes={minutes}"], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        plans = re.findall(r"plan: (\d+) steps \(([\d.]+) s/step measured, (\d+) steps fit\); "
                           r"warmup (\d+) steps.*averaged at steps ([\d, ]+)", out.stdout)
        assert plans, out.stdout
        stopped = int(re.search(r"stopped at step (\d+)", out.stdout).group(1))
        return [(int(t), float(r), int(f), int(w), [int(s) for s in a.split(", ")])
                for t, r, f, w, a in plans], stopped

    # Tracing the first step counts against the budget too (it is wall-clock): half a minute
    # leaves hundreds of tiny steps even on a loaded 2-core machine.
    plans, stopped = run(0.5)
    total, rate, fits, warmup, averaged = plans[-1]
    # The warmup is fixed once passed, at 20% of the total planned then; a machine that slows
    # down (or speeds up) afterwards moves the total, not the warmup.
    assert total == fits and 0.1 * total <= warmup <= 0.4 * total and averaged[-1] == total
    # The deadline stays a hard stop; the plan leaves room, so the run normally ends on plan,
    # the plan in force being within the 10% that re-plans move before they are printed.
    assert 0 < stopped <= 1.1 * total
    # Re-plans under 10% are not printed, so the window's exact steps may have moved a little:
    # the newest three checkpoints (average_last = 3) lie in the final 10% of the run.
    numbers = sorted(int(p.rsplit("-", 1)[1]) for p in tf.train.get_checkpoint_state(
        str(model_dir)).all_model_checkpoint_paths)
    assert numbers[-1] == stopped
    if stopped == total:
        # Ended on plan (the normal case): the whole window was written. On a machine whose
        # rate swings (other jobs on the 2 cores) the deadline may cut the window short.
        assert len(numbers) >= 3 and all(n >= 0.9 * stopped for n in numbers[-3:]), numbers

    # Re-plans that move the total by under 10% are not printed: the warmup in force is the one
    # the checkpoint holds.
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(model_dir)))
    warmup_done = int(reader.get_tensor("plan_warmup/.ATTRIBUTES/VARIABLE_VALUE"))
    assert abs(warmup_done - warmup) <= 0.1 * warmup

    plans2, stopped2 = run(0.8)
    total2, _, _, warmup2, averaged2 = plans2[-1]
    assert total2 > stopped and stopped2 > stopped
    assert warmup2 == warmup_done  # the warmup already done is kept
    assert min(averaged2) > stopped



def test_a_rerun_of_a_finished_plan_with_room_for_more_steps_warns(capsys):
    """Its learning rate reached 0 at step 100: more steps go on from there (as any resume
    inside the decay), with a warning that they change little and how to train on instead."""
    _, _, _, planner = _resumed(100, 300)
    out = capsys.readouterr().out
    assert "warning: the run's plan ended at step 100 with its learning rate decayed to 0" in out
    assert "--warm_start_from" in out and planner.plan.total_steps == 300
    _resumed(100, 100)  # no room for more steps: nothing to warn about
    _resumed(60, 300)  # inside the decay
    assert "warning" not in capsys.readouterr().out
