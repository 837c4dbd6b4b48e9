"""Export and serving: text-in/text-out SavedModels, and file-level batch decoding.

    serving_module  TranslationModule: tokenizer + Transformer + beam search as tf.functions
    exporter        versioned SavedModel folders (E/<n>/) for tf.saved_model.load and TF Serving
    batch_decode    files of lines -> translations, one output line per input line, in order
"""
