"""README/CI agreement and the wheel's contents (gin sets and problems found after a plain install)."""
import pathlib
import re
import subprocess
import sys
import zipfile

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
