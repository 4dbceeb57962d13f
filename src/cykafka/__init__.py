# Placeholder so cykafka.presets/config/explain/cli import in tests; the core engineer's
# __init__.py replaces this on merge.
