"""Writers of trained models for other runtimes: nothing here translates.

    exporters             the Exporter interface and its registry by format name (--format)
    saved_model_versions  versioned SavedModel folders (E/<n>/) for tf.saved_model.load and
                          TF Serving
    ctranslate2_export    a CTranslate2 model folder (`t2t-lite-exporter --format=ctranslate2`)
"""
