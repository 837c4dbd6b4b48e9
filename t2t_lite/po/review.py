"""translate-toolkit's checks as t2t-lite-po's second judge, after msgfmt's: the library behind
pofilter, Weblate and Pootle (`translate.filters.checks`), run on every candidate translation
before it is written.

    reviewer = Reviewer.for_catalog(catalog.header_fields(), catalog.messages(), "de")
    reviewer.unexplained("Name:\\t%s", "Name: %s")   ->  "tabs"

A candidate is refused for a failure its source does not explain: a check in CHECKS that fails
for (source, candidate) but not for (source, source), the source copied as its own translation
(a source that says "bla bla" explains a repeated word). The checker is configured from the
catalog: its target language (the Language field), its accelerator mark (accelerators.convention;
none when the catalog shows none) and printf's one-character variables (`%s`, as translate-
toolkit's GNOME and KDE settings have them).
"""
import functools

from translate.filters import checks as tt_checks

from t2t_lite.po import accelerators

# The checks every translation t2t-lite-po writes passes (unless its source fails them too).
CHECKS = ("escapes", "newlines", "tabs", "printf", "pythonbraceformat", "xmltags", "urls",
          "emails", "filepaths", "options", "numbers", "brackets", "doublewords",
          "accelerators", "startwhitespace", "endwhitespace", "variables")
# How a refusal reads in a hypothesis's problem and in the summary's reasons.
_PROBLEM = "translate-toolkit's {} check"
LEFT = "translate-toolkit's {} check fails for every hypothesis"


def problem(name):
    return _PROBLEM.format(name)


def left_reason(problem_text):
    """The summary's reason for an entry left untranslated with this problem, or None where
    the problem is not this judge's."""
    for name in CHECKS:
        if problem_text == problem(name):
            return LEFT.format(name)
    return None


class Reviewer:
    """translate-toolkit's StandardChecker limited to CHECKS, for one catalog's settings."""

    def __init__(self, target_language=None, accelerator_mark=None, checks=CHECKS):
        self.accelerator_mark = accelerator_mark
        self.config = tt_checks.CheckerConfig(
            targetlanguage=target_language or None,
            accelmarkers=[accelerator_mark] if accelerator_mark else [],
            varmatches=[("%", 1)])
        self.checks = tuple(checks)
        self.checker = tt_checks.StandardChecker(checkerconfig=self.config,
                                                 limitfilters=list(self.checks))
        self._own = functools.lru_cache(maxsize=65536)(self._failures)

    @classmethod
    def for_catalog(cls, header_fields, messages, target_language=None, checks=CHECKS):
        header_fields = list(header_fields)
        language = target_language or dict(header_fields).get("Language") or None
        return cls(language, accelerators.convention(header_fields, messages), checks)

    def _failures(self, source, translation):
        failed = []
        # The checks' helpers cache by string in the checker; pofilter empties it per unit.
        self.checker.results_cache = {}
        for name in self.checks:
            try:
                passed = getattr(self.checker, name)(source, translation)
            except tt_checks.FilterFailure:
                passed = False
            if not passed:
                failed.append(name)
        return tuple(failed)

    def failures(self, source, translation):
        """The checks of CHECKS that fail for (source, translation), in CHECKS's order."""
        return self._failures(source, translation)

    def unexplained(self, source, translation):
        """The first check that fails for translation and not for the source as its own
        translation, or None."""
        failed = self._failures(source, translation)
        if not failed:
            return None
        own = self._own(source, source)
        return next((name for name in failed if name not in own), None)

    def entry_problem(self, msgid, msgid_plural, msgstrs):
        """The first unexplained failure of an entry's translations, paired as pofilter pairs
        them (msgstr[0] with msgid, every other form with msgid_plural), as problem(name); None
        when none."""
        for index, text in enumerate(msgstrs):
            source = msgid if index == 0 or msgid_plural is None else msgid_plural
            name = self.unexplained(source, text)
            if name:
                return problem(name)
        return None
