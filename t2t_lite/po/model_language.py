"""The language a model translates into, from what its model_dir or export records."""
import json
import os
import re

from t2t_lite.errors import UserError


def model_info(model_dir=None, export_dir=None):
    """(problem name, target language) the model records; either may be None."""
    problem, params = None, []
    try:
        if model_dir:
            from t2t_lite.model_dir import files

            info = files.read_run_info(model_dir)
            problem, params = info.get("problem"), info.get("problem_params") or []
        elif export_dir:
            from t2t_lite.inference import saved_model

            path = os.path.join(export_dir, saved_model.METADATA_NAME)
            if not os.path.isfile(path):
                path = os.path.join(saved_model.latest_version_dir(export_dir),
                                    saved_model.METADATA_FILE)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    metadata = json.load(f)
                problem, params = metadata.get("problem"), metadata.get("problem_params") or []
    except (OSError, ValueError):
        return None, None  # the decoder says what is wrong with the model
    for pair in params:
        key, _, value = str(pair).partition("=")
        if key == "target_lang" and value:
            return problem, value
    return problem, problem_target_language(problem)


def problem_target_language(problem):
    """A registered problem's target language (its class's target_language or
    default_target_lang), else the tensor2tensor name's (translate_ende_*: de), else None."""
    if not problem:
        return None
    from t2t_lite import problems, registry  # noqa: F401  (problems: the built-ins registered)

    try:
        cls = registry.problem_class(problem)
    except UserError:
        cls = None
    for attribute in ("target_language", "default_target_lang"):
        value = getattr(cls, attribute, None)
        if isinstance(value, str) and value:
            return value
    found = re.match(r"translate_([a-z]{2})([a-z]{2})(_|$)", registry.canonical_name(problem)
                     if cls else problem)
    return found.group(2) if found else None
