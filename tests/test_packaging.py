"""README/CI agreement and the wheel's contents (gin sets and problems found after a plain install)."""
import os
import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def readme_test_command():
    text = (ROOT / "README.md").read_text()
    section = text.split("Run the tests", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert readme_test_command() in ci_lines


def test_no_init_in_gin_folder():
    assert not (ROOT / "t2t_lite" / "hparams_sets" / "__init__.py").exists()


@pytest.mark.slow
def test_wheel_ships_gin_sets_problems_and_clis(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("t2t_lite-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "t2t_lite/hparams_sets/base.gin" in names
    assert "t2t_lite/hparams_sets/table3/B_dk16.gin" in names
    assert "t2t_lite/problems/__init__.py" in names
    assert "t2t_lite/bin/print_params.py" in names
    assert not any(n.startswith(("problems/", "gin/", "bin/", "tests/")) for n in names)
    # Every module of the source tree ships: a new subpackage missing from setup.py broke
    # `pip install .` once (t2t_lite.model_dir) while the editable install hid it.
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "t2t_lite").rglob("*.py")}
    assert sources - set(names) == set()

    # Import from the unpacked wheel, from another folder, bypassing the editable install.
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    probe = (
        "import sys; sys.meta_path = [f for f in sys.meta_path "
        "if 'editable' not in type(f).__module__.lower() and 'editable' not in repr(f).lower()]; "
        f"sys.path.insert(0, {str(target)!r}); "
        "import t2t_lite, t2t_lite.hparams as h; "
        f"assert t2t_lite.__file__.startswith({str(target)!r}), t2t_lite.__file__; "
        "print(h.hparams_dir()); print(len(h.list_hparams_sets())); h.load('big_enfr')"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(target)) and int(out[1]) >= 25


@pytest.mark.slow
def test_a_plain_install_works_from_the_repository_root(tmp_path):
    """The fresh-clone failure: after `pip install .`, running a tool from the checkout's root
    imported the checkout's t2t_lite/, which lacked bin/ and problems/ (they were remapped from
    the top level). Install without the editable finder, then run from the root."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                    "-q", "--target", str(target), str(ROOT)], check=True, capture_output=True)
    without_editable = (
        "import sys; sys.meta_path = [f for f in sys.meta_path "
        "if 'editable' not in type(f).__module__.lower() and 'editable' not in repr(f).lower()]; "
        "sys.path_hooks = [h for h in sys.path_hooks if 'editable' not in repr(h).lower()]; "
        "sys.path = [p for p in sys.path if '__editable__' not in p]; "
        f"sys.path.insert(1, {str(target)!r}); ")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    registry_help = subprocess.run(
        [sys.executable, "-c", without_editable + "import runpy; "
         "sys.argv = ['t2t-lite-datagen', '--registry_help']; "
         "runpy.run_module('t2t_lite.bin.datagen', run_name='__main__')"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert registry_help.returncode == 0, registry_help.stderr[-2000:]
    assert "translate_ende_gettext" in registry_help.stdout and "small_cpu" in registry_help.stdout
    imported = subprocess.run(
        [sys.executable, "-c", without_editable +
         "import t2t_lite.problems.gettext as g, t2t_lite.hparams as h; print(g.__file__); "
         "print(h.hparams_dir())"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr[-2000:]
    # From the root the checkout's files are what Python imports: the tree does not lie.
    module_file, sets_dir = imported.stdout.split()
    assert module_file == str(ROOT / "t2t_lite" / "problems" / "gettext.py")
    assert sets_dir == str(ROOT / "t2t_lite" / "hparams_sets")


def test_top_level_card_folders_are_links_into_the_package():
    for name, inside in (("bin", "bin"), ("problems", "problems"), ("gin", "hparams_sets")):
        link = ROOT / name
        assert link.is_symlink() and link.resolve() == (ROOT / "t2t_lite" / inside).resolve()
