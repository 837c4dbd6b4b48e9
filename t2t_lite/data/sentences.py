"""Sentence splitting of long source lines, so that each sentence is translated on its own.

A model trained on sentence-sized segments (software messages, WMT sentences) translates a line of
several long sentences worse than each sentence alone: it drops whole clauses. The decoder and the
trainer's dev BLEU therefore split a long source line into its sentences, translate the sentences
beside every other line, and join their translations with a space, still one output line per input
line. Splitting follows the Moses rules (the `sentence-splitter` package): a full stop, question or
exclamation mark followed by a space and an upper-case start ends a sentence, except after the
language's non-breaking prefixes ("Mr.", "z.B.", "e.g.").

Only lines of at least `min_words` words are split: a short message of two sentences ("Not
found. Try again.") is what such a model has seen in training, and short lines are where the rules
misfire most ("Usage: %s OPTION... COMMAND").
"""
import functools
import os

from t2t_lite.errors import UserError

# Lines shorter than this many whitespace-separated words are translated whole.
MIN_WORDS = 20
# What --split_sentences takes (splitting_for's settings).
SETTINGS_HELP = ('"auto" (the problem\'s source language, where the rules know it), "off", or '
                 'the source language\'s code (for a problem that names none)')


@functools.lru_cache(maxsize=None)
def supported_languages():
    """Language codes with Moses non-breaking prefix lists in sentence-splitter."""
    import sentence_splitter

    folder = os.path.join(os.path.dirname(sentence_splitter.__file__), "non_breaking_prefixes")
    return tuple(sorted(name[:-4] for name in os.listdir(folder) if name.endswith(".txt")))


class SentenceSplitting:
    """Splits a line into sentences when it has at least `min_words` words.

    Args:
      language: source language code (one of supported_languages()).
      min_words: shorter lines are returned whole.
    """

    def __init__(self, language, min_words=MIN_WORDS):
        if language not in supported_languages():
            raise UserError(f"no sentence splitting rules for language {language!r}; known: "
                            f"{', '.join(supported_languages())}")
        from sentence_splitter import SentenceSplitter

        self.language, self.min_words = language, int(min_words)
        self._splitter = SentenceSplitter(language=language)

    def split(self, text):
        """The sentences of `text` (itself alone if short or a single sentence)."""
        if len(text.split()) < self.min_words:
            return [text]
        parts = [part for part in self._splitter.split(text) if part.strip()]
        return parts if len(parts) > 1 else [text]

    def split_all(self, texts, whole=None):
        """(pieces, spans): every text's sentences in order, and per text its (start, end) in
        pieces. A text that is not split is one piece, itself; so is text i where whole[i]."""
        pieces, spans = [], []
        for i, text in enumerate(texts):
            parts = [text] if whole is not None and whole[i] else self.split(text)
            spans.append((len(pieces), len(pieces) + len(parts)))
            pieces.extend(parts)
        return pieces, spans


def join_translations(translations):
    """One line from the translations of one line's sentences."""
    return " ".join(t.strip() for t in translations if t.strip())


def splitting_for(language, setting="auto", min_words=MIN_WORDS):
    """The SentenceSplitting that `setting` asks for, or None for whole lines.

    setting: "auto" splits in `language` (the problem's source language) where the rules know it;
    "off" never splits; a language code splits with that language's rules.
    """
    if setting == "off":
        return None
    if setting == "auto":
        return (SentenceSplitting(language, min_words) if language in supported_languages()
                else None)
    return SentenceSplitting(setting, min_words)
