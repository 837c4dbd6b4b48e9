"""Translation at run time: text in, text out.

    translator          TranslationModule: tokenizer + Transformer + beam search as tf.functions,
                        the one place where text becomes ids and back (also what a SavedModel holds)
    batch_decode        files of lines -> translations, one output line per input line, in order
    parallel_search     each batch split over the CPU cores, one search per core
    ctranslate2_engine  CTranslate2 as the search engine behind the same interface
"""
