"""bench/serving_matrix.py: its op check finds what an older op registry lacks, and a run in this
interpreter alone loads the export both ways and compares it with itself."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "serving_matrix.py")
_spec = importlib.util.spec_from_file_location("serving_matrix", SCRIPT)
serving_matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serving_matrix)


def test_the_op_check_names_missing_ops_and_unknown_attributes():
    needed = {"VarHandleOp": ["debug_name", "dtype", "shape"], "SentencepieceOp": ["model"],
              "NewOp": []}
    registered = {"VarHandleOp": ["container", "dtype", "shape", "shared_name"],
                  "SentencepieceOp": ["model", "use_node_name_sharing"]}
    assert serving_matrix.op_check(needed, registered) == (["NewOp"], ["VarHandleOp.debug_name"])


def test_outputs_compare_exactly_and_floats_relative_above_one():
    mismatch, worst = serving_matrix.largest_difference([[-40.0, -0.5]], [[-40.0004, -0.5]])
    assert mismatch is None and worst == pytest.approx(1e-5)
    mismatch, _ = serving_matrix.largest_difference([["Datei"]], [["Ordner"]], "nbest.outputs")
    assert mismatch == "nbest.outputs[0][0]: 'Datei' != 'Ordner'"
    assert serving_matrix.largest_difference([[1, 2]], [[1]], "ids")[0] == "ids[0]: shape differs"


@pytest.mark.slow
def test_the_export_loads_eagerly_and_in_a_session_with_the_same_outputs(export_version_dir,
                                                                         tmp_path):
    output = tmp_path / "matrix.json"
    # The tiny test vocabulary spells "Katze", not the default's "Datei".
    result = subprocess.run([sys.executable, SCRIPT, f"--export_dir={export_version_dir}",
                             f"--output={output}", "--constraints=Katze"],
                            capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    row = json.loads(output.read_text())["environments"]["this interpreter"]
    assert row["outputs_identical"] and row["ops_missing"] == []
    assert set(row["eager"]) == set(row["session"]) == set(serving_matrix.SIGNATURES)
    assert "SentencepieceTokenizeOp" in row["text_ops_in_export"]
