"""Packaging for t2t_lite.

The source tree is the import tree: everything installed lives under t2t_lite/ (no package_dir
remap, which made a checkout's t2t_lite/ shadow the installed package's bin/ and problems/). The
top-level bin/, problems/ and gin/ are symlinks into t2t_lite/ (bin, problems, hparams_sets), kept
for the design card's layout. The gin sets are data, never a Python package: an __init__.py among
them would shadow the gin-config library.
"""
import pathlib

from setuptools import find_packages, setup

ROOT = pathlib.Path(__file__).parent

# Versions tested together on Python 3.11 (CPU). tensorflow-text needs the full tensorflow wheel.
INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",
    "tensorboard==2.21.0",  # tf.summary needs it; tensorflow 2.21 no longer pulls it in
    "keras==3.15.1",
    "sacrebleu==2.6.0",
    "absl-py==2.5.1",
    "gin-config==0.5.0",
    "sentencepiece==0.2.3",
    "sentence-splitter==1.4",  # Moses sentence rules: long decoder lines go sentence by sentence
    "sacremoses==0.2.0",  # Moses tokenizer for the paper's tokenized BLEU
    "polib==1.2.0",  # gettext .mo catalogs for the gettext problems
    "translate-toolkit==3.20.4",  # pofilter's checks: t2t-lite-po's second judge (po/review.py)
    "numpy>=1.26,<3",
]

# Console scripts appear here only once the command really works.
CONSOLE_SCRIPTS = [
    "t2t-lite-print-params=t2t_lite.bin.print_params:run",
    "t2t-lite-datagen=t2t_lite.bin.datagen:run",
    "t2t-lite-trainer=t2t_lite.bin.trainer:run",
    "t2t-lite-avg-checkpoints=t2t_lite.bin.avg_checkpoints:run",
    "t2t-lite-exporter=t2t_lite.bin.exporter:run",
    "t2t-lite-decoder=t2t_lite.bin.decoder:run",
    "t2t-lite-score=t2t_lite.bin.score:run",
    "t2t-lite-bleu=t2t_lite.bin.bleu:run",
    "t2t-lite-parseval=t2t_lite.bin.parseval:run",
    "t2t-lite-attention-plot=t2t_lite.bin.attention_plot:run",
    "t2t-lite-demo=t2t_lite.bin.demo:run",
    "t2t-lite-table3=t2t_lite.bin.table3:run",
    "t2t-lite-po=t2t_lite.bin.po:run",
]

setup(
    name="t2t_lite",
    version="0.1.0",
    description='The Transformer of "Attention Is All You Need" for TensorFlow 2 / Keras 3',
    license="Apache-2.0",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # Every Python package under t2t_lite/ (a new one cannot be forgotten), plus the gin sets'
    # folder, which is data without an __init__.py.
    packages=find_packages(include=["t2t_lite", "t2t_lite.*"]) + ["t2t_lite.hparams_sets"],
    package_data={"t2t_lite.hparams_sets": ["*.gin", "*/*.gin"]},
    include_package_data=False,
    install_requires=INSTALL_REQUIRES,
    extras_require={
        # ctranslate2: the exporter's --format=ctranslate2 (and its tests, hence in "test").
        # pytest-xdist: the quick tier runs on both cores (`-n 2`).
        # import-linter: the layering contract (.importlinter), run from the tests.
        # tensorflow-serving-api: the gRPC client of docs/decoding.md (and its test).
        # kubernetes-validate: deploy/kubernetes/ against the API schemas it bundles (offline).
        "test": ["pytest==9.2.0", "pytest-xdist==3.8.0", "matplotlib==3.11.2",
                 "ctranslate2==4.8.5", "import-linter==2.17", "tensorflow-serving-api==2.21.0",
                 "kubernetes-validate==1.37.0", "PyYAML==6.0.4"],
        "ctranslate2": ["ctranslate2==4.8.5"],
        # The client's release is the tensorflow pin's: it requires tensorflow>=2.21.0,<3.
        "serving": ["tensorflow-serving-api==2.21.0"],
        "viz": ["matplotlib==3.11.2"],
    },
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
