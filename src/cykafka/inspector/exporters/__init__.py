"""Exporters: the inspector's figures sent where operators look.  Each needs its own
optional extra (``cykafka[otel]`` for :mod:`cykafka.inspector.exporters.otel`) and is
imported only by whoever uses it."""
