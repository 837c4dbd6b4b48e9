"""A catalog's header for the target language: what t2t-lite-po sets, and the plural rule it uses.

A catalog whose header lacks a Language, Plural-Forms or charset (a .pot: "CHARSET",
"nplurals=INTEGER") gets them for the target language, as msginit does: Language, Plural-Forms
from PLURAL_FORMS (gettext's plural forms of common languages), Content-Type text/plain;
charset=UTF-8, and the header's fuzzy mark goes. PO-Revision-Date is set when a translation was
written. These are the only header fields the tool writes; every other header byte stays.
"""
import datetime

from t2t_lite.errors import UserError
from t2t_lite.po import plural

# Every header field the tool may write (see the module docstring).
FIELDS_SET = ("Language", "Plural-Forms", "Content-Type", "Content-Transfer-Encoding",
              "MIME-Version", "PO-Revision-Date")

# gettext's Plural-Forms for common languages (the GNU gettext manual, "Plural forms", and
# msginit's table), keyed by language code; a code with a region (pt_BR) is looked up whole
# first, then by its language.
PLURAL_FORMS = {
    **{code: "nplurals=1; plural=0;" for code in
       ("ja", "ko", "zh", "vi", "th", "id", "ms", "lo", "km", "my")},
    **{code: "nplurals=2; plural=(n != 1);" for code in
       ("en", "de", "nl", "sv", "da", "nb", "nn", "no", "fi", "et", "el", "eo", "it", "es",
        "pt", "hu", "bg", "ca", "eu", "gl", "he", "tr", "af", "sq", "hi", "bn", "ur", "fa",
        "ta", "te", "ml", "kn", "mr", "gu", "pa", "sw", "fy", "lb", "is")},
    **{code: "nplurals=2; plural=(n > 1);" for code in ("fr", "pt_BR", "oc", "br", "fil",
                                                         "tl", "ln", "wa")},
    **{code: ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
              "(n%100<10 || n%100>=20) ? 1 : 2);") for code in ("ru", "uk", "be", "sr", "hr",
                                                                 "bs")},
    "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "sk": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "pl": ("nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 "
           ": 2);"),
    "lt": ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && (n%100<10 || "
           "n%100>=20) ? 1 : 2);"),
    "lv": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);",
    "ro": "nplurals=3; plural=(n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2);",
    "ga": "nplurals=5; plural=(n==1 ? 0 : n==2 ? 1 : n<7 ? 2 : n<11 ? 3 : 4);",
    "sl": "nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
    "ar": ("nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
           ": n%100>=11 ? 4 : 5);"),
}

# The placeholders xgettext writes into a template's header.
_TEMPLATE_VALUES = ("LANGUAGE", "CHARSET", "INTEGER", "EXPRESSION")


def field_value(value):
    """A header field's value, "" for a missing one or a template's placeholder."""
    value = (value or "").strip()
    return "" if not value or any(p in value for p in _TEMPLATE_VALUES) else value


def plural_forms_for(language):
    """gettext's Plural-Forms for a language code (pt_BR, de), or None."""
    if not language:
        return None
    code = language.replace("-", "_")
    return PLURAL_FORMS.get(code) or PLURAL_FORMS.get(code.split("_")[0].lower())


def same_language(a, b):
    return a.replace("-", "_").split("_")[0].lower() == b.replace("-", "_").split("_")[0].lower()


class HeaderPlan:
    """What the header becomes: `changes` (fields to set), the target language and the plural
    rule (plural.PluralRule, None where the catalog has no plural entry and no known rule)."""

    def __init__(self, changes, target, rule):
        self.changes, self.target, self.rule = changes, target, rule

    def fields(self, translated, now=None):
        """The header fields to write: the planned ones, and PO-Revision-Date when a translation
        was written."""
        fields = dict(self.changes)
        if translated:
            now = now or datetime.datetime.now().astimezone()
            fields["PO-Revision-Date"] = now.strftime("%Y-%m-%d %H:%M%z")
        return fields


def plan(metadata, has_plurals, first_plural_line, target_language, where, charset=None):
    """The HeaderPlan for a header's fields (`metadata`: name -> value) and a target language;
    `charset`: the one the header entry names as msgfmt reads it (po_lexer.encoding_of), None
    for none. where(field or None) -> "path:line" for messages. UserError where it cannot
    work: a catalog in another language, a Plural-Forms that cannot be read, plural entries
    without a rule."""
    language = field_value(metadata.get("Language"))
    if language and target_language and not same_language(language, target_language):
        raise UserError(f"{where('Language')}: the catalog is in {language!r}, but the "
                        f"translations would be in {target_language!r}; translate it with a "
                        "model into its language, or give --target_language")
    target = target_language or language or None
    changes = {}
    if not language and target:
        changes["Language"] = target
    plural_forms = field_value(metadata.get("Plural-Forms"))
    rule = None
    if plural_forms:
        try:
            rule = plural.parse(plural_forms)
        except ValueError as error:
            raise UserError(f"{where('Plural-Forms')}: the header's Plural-Forms "
                            f"{plural_forms!r} cannot be read ({error})") from None
    else:
        plural_forms = plural_forms_for(target)
        if plural_forms:
            changes["Plural-Forms"] = plural_forms
            rule = plural.parse(plural_forms)
        elif has_plurals:
            why = (f"the catalog's language {target!r} is not in t2t-lite-po's table of "
                   "plural forms" if target else
                   "no target language is known (give --target_language)")
            raise UserError(f"{where('Plural-Forms')}: the header has no Plural-Forms, the entry "
                            f"at line {first_plural_line} has plural forms, and {why}; add a "
                            "Plural-Forms line to the header")
    if not charset or charset == "CHARSET":  # what the catalog is read in: UTF-8
        changes["Content-Type"] = "text/plain; charset=UTF-8"
        if not field_value(metadata.get("Content-Transfer-Encoding")):
            changes["Content-Transfer-Encoding"] = "8bit"
    if not field_value(metadata.get("MIME-Version")) and changes:
        changes["MIME-Version"] = "1.0"
    return HeaderPlan(changes, target, rule)

