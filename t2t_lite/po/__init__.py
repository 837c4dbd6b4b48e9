"""t2t-lite-po's pieces: a gettext catalog translated without breaking what msgfmt accepts.

- catalog_file: a PO/POT file read as gettext reads it (its refusals too) and written back byte
  for byte except what is changed: its entries and header.
- po_lexer: gettext's lexer and grammar over a PO file's lines: its charset, its messages, and
  msgfmt's refusals as FILE:LINE errors.
- iconv_codec: the charsets msgfmt reads that Python lacks (EUC-TW, GEORGIAN-PS), through iconv.
- po_strings: a string written as msgmerge writes it: escapes, Unicode line breaking at 79
  columns, never inside a format directive.
- formats: msgfmt's reading of c-format, objc-format, python-format, python-brace-format,
  qt-format, qt-plural-format and kde-format strings, and msgfmt -c's verdict on a translation
  (format directives, newlines, accelerators); each language read in one of the modules below.
- format_base: the languages msgfmt knows, Directive, FormatError, UnsupportedFormat.
- format_c: c-format and objc-format read and compared as gettext's format-c.c does.
- format_python: python-format and python-brace-format, as format-python(-brace).c.
- format_qt_kde: qt-format, qt-plural-format and kde-format, as format-qt(-plural).c, format-kde.c.
- plural: a Plural-Forms header value parsed and evaluated as msgfmt does (never eval).
- header: the header fields the tool sets for the target language, and its plural rule.
- accelerators: the catalog's accelerator mark, a source's accelerator (in prose) taken out and
  placed on the translation.
- entries: which entries are translated, from which source, and which hypothesis is kept.
- engine: the model, loaded once per run, with a journal a killed run resumes from.
- judge: msgfmt itself, over the catalog's bytes before they are written.
- review: translate-toolkit's checks (pofilter's) on every candidate, the second judge.
- compose: the output from the input's bytes read once, the translations written in, judged.
- work_folder: OUTPUT.t2t-po-work, an unfinished run's work.
- run: PoOptions, PoStats and translate_catalog, the whole run.
"""
