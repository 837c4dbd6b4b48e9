"""Table 3 of "Attention Is All You Need" (model variations) as one resumable command.

Every row of the table is an hparams set, `table3/<row>` (t2t_lite/hparams_sets/table3/). For
each selected row, `run_table` trains the row in its own model_dir with the trainer's library
call in a child process (t2t_lite.isolated: TensorFlow state never leaks from one row into the
next, and a row that crashes does not take the table with it), then evaluates it as the paper's Table 3 does
(section 6.2): the last checkpoint, no checkpoint averaging; dev perplexity per subword token and
dev BLEU of a beam-4, alpha-0.6 decode (`t2t-lite-decoder`). Every row gets the same data,
vocabulary, seed, precision and step budget. Everything goes under one folder:

    O/table3.json        what the table is (problem, scale, budget, data, precision, machine),
                         every row's model_dir, evaluation and seconds, the findings checked
    O/table3.md, .csv    the table in the paper's layout, the paper's own numbers beside ours,
                         then the paper's findings (section 6.2) checked on its rows
    O/table3.png         each row's effect on dev BLEU and perplexity relative to base
    O/dev.src, dev.ref   the dev split (problem.text_path(data_dir, "dev")) as two files
    O/<row>/model/       the row's model_dir
    O/<row>/dev.translation, decode_summary.json, bleu.txt   the row's dev decode and its score
    O/<row>/result.json  the row's evaluation, written last: a row that has one is finished
    O/<row>/failure.json why the row failed (a re-run tries it again)

Re-running the same command skips finished rows and resumes a killed one (the trainer continues
from the row's latest checkpoint). An out_dir holding a table of another problem, scale, budget
or data is refused before anything is written.

`--scale=cpu` maps every row to a size a 2-core CPU trains in minutes, by rules applied to the
row's own set (`cpu_bindings`): the rows keep what they vary, in proportion to the CPU base.
`--scale=paper` trains the sets as they are.

The modules, one job each (this __init__ imports none of them: the perplexity worker, a
subprocess, loads only what it needs):

    paper       the paper's rows and numbers (PAPER, ROWS, GROUPS), its columns and evaluation
    mapping     the scales: the CPU mapping of a row's set (cpu_bindings), what a row varies
    selection   --rows -> row names (select_rows)
    machine     the machine a table ran on, as reported
    table       the out_dir: file names, the record (Table), the table's identity
    plan        what each row trains (RowPlan) and the table's precision
    run         run_table (TableOptions): the rows in order, resumable, then the outputs
    row_runner  one row: the trainer, dev perplexity and BLEU (RowRunner), failure reasons
    result      a finished row's result (RowResult), as result.json and table3.json hold it
    findings    the paper's findings checked on the rows (BLEU by paired bootstrap)
    outputs     table3.md, .csv, .png and .json from the rows' records
"""
