"""Per-paper artifact builders: which runs feed which table or figure, and the claims checked against them.

The keys a paper's params file adds are data, not code: ``papers/<paper>/keys.yaml`` beside its params.yaml
(:func:`osfl.config.pipeline_keys`), so that no stage but the renders imports this package.
"""
