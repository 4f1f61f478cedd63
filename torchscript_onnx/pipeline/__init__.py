"""The pipeline an export runs through: a model in, an ONNX file out.

``capture`` (trace or script, arguments bound), ``prepare/`` (rewrites of the captured graph),
``convert`` (each node through its symbolic, into the builder's graph), ``optimize/``, ``serialize``
(the ModelProto, written with its weights) and what they share: ``legacy_names``, ``scopes``,
``provenance``, ``functions`` (export_modules_as_functions), ``inputs_kept``, ``hf_cache``,
``pages``, ``progress``, ``printer``. It imports the builder and the symbolics, never the API
above it (tests/test_layers.py).
"""
