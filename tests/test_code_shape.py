"""The package's shape: no function in t2t_lite longer than MAX_LINES (issue 46 point 6; 60 since
issue 54), so each reads as one step; a longer one is split into named steps. No module longer
than MAX_MODULE_LINES (issue 54): a longer one is split into modules of one subject each."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "t2t_lite"
MAX_LINES = 60
MAX_MODULE_LINES = 500


def long_functions(root=ROOT, limit=MAX_LINES):
    """(path, function, lines) for each function or method over `limit` lines, decorators
    left out, docstring and body counted."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append((str(path.relative_to(root.parent)), node.name, lines))
    return found


def long_modules(root=ROOT, limit=MAX_MODULE_LINES):
    """(path, lines) for each module under `root` over `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append((str(path.relative_to(root.parent)), lines))
    return found


def test_no_function_in_t2t_lite_is_over_60_lines():
    assert long_functions() == []


def test_no_module_in_t2t_lite_is_over_500_lines():
    offenders = long_modules()
    assert not offenders, (
        f"modules over {MAX_MODULE_LINES} lines (split each into modules of one subject): "
        + ", ".join(f"{path} ({lines} lines)" for path, lines in offenders))


def test_the_check_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}\n")
    assert [(name, lines) for _, name, lines in long_functions(tmp_path)] == [
        ("long", MAX_LINES + 1)]


def test_the_check_finds_a_long_module(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n")
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert [(path.split("/")[-1], lines) for path, lines in long_modules(tmp_path)] == [
        ("long.py", MAX_MODULE_LINES + 1)]
