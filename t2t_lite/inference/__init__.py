"""Translation at run time: text in, text out.

    translator          the Translator protocol the three engines implement, and DecodeSettings,
                        their fixed settings checked once
    translation_module  TranslationModule: tokenizer + Transformer + beam search as tf.functions,
                        the one place where text becomes ids and back (also what a SavedModel holds)
    saved_model         finding, checking and loading the SavedModels t2t-lite-exporter writes
    ctranslate2_engine  CTranslate2 as the search engine behind the same interface
    constraints         constraint lines and glossaries: what a decoded line must and must not say
    graph_constraints   constraint lines read, checked and counted inside the exported graph
    graph_prefixes      the pieces a `*` prefix form bars, found from the vocabulary in the graph
    word_pieces         which of the vocabulary's tokens start or end a word, for terms as words
    span_finding        format specifiers and markup of a source line found: the patterns (text)
    code_spans          code-like text (URLs, paths, options, numbers, identifiers ...): patterns
    protected_spans     the --protect setting, and the repair that restores a line's spans (text)
    graph_spans         the same in TensorFlow ops, inside exported SavedModels: the repair
    graph_span_finding  the spans found in TensorFlow ops: span_finding's patterns for RE2
    batch_decode        files of lines -> translations, one output line per input line, in order
    batching            batches planned to fit --batch_tokens and the memory a search step holds
    line_checks         after the search: protected spans repaired, constraints counted as met
    records             one Translation record per line, and the writers of the output formats
    scoring             given translations -> log P(target | source) and the beam's score, per pair
    parallel_search     each batch split over the CPU cores, one search per core
    line_input          the decoder's and the scorer's input lines, from a file, a shard or a pipe
    streaming           the chunk loop both run: read a chunk, process it, append its lines
    resume              where finished chunks go: a resumable output file, or a stream
"""
