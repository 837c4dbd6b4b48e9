"""The package's layering (.importlinter): imports point down, checked by import-linter."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO, ".importlinter")


def _lint(config_path):
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")
    return subprocess.run([sys.executable, "-c", code, config_path], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def test_imports_point_down_the_layers():
    result = _lint(CONFIG)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The same contract with models put below layers: models' real imports of layers are then
    upward, and the check must say so."""
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    swapped = text.replace("    t2t_lite.layers | t2t_lite.data\n", "    t2t_lite.data\n")
    swapped = swapped.replace("    t2t_lite.models | t2t_lite.problems |",
                              "    t2t_lite.layers | t2t_lite.problems |")
    swapped = swapped.replace("    t2t_lite.data\n", "    t2t_lite.data\n    t2t_lite.models\n", 1)
    assert swapped != text
    config = tmp_path / "swapped.ini"
    config.write_text(swapped, encoding="utf-8")
    result = _lint(str(config))
    assert result.returncode == 1, result.stdout[-3000:]
    assert "t2t_lite.models is not allowed to import t2t_lite.layers" in result.stdout
