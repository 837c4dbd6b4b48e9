"""Built-in problems, installed as t2t_lite.problems; importing this package registers them all."""
from t2t_lite.problems import algorithmic  # noqa: F401  (registers on import)
from t2t_lite.problems import text_files  # noqa: F401
from t2t_lite.problems import wmt14  # noqa: F401
from t2t_lite.problems import gettext  # noqa: F401
from t2t_lite.problems import parsing  # noqa: F401
