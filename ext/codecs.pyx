# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""cykafka._codecs -- compiled codecs that turn input into message bytes, apart from
the producer core (they need no librdkafka): Arrow columns to JSON and to Avro, a
text block to lines, a plain CSV block to JSON records.  Their errors are Python's
own (ValueError, TypeError, MemoryError): the producer's error classes stay in
cykafka._native.

This file is only a hub: each codec lives in its own .pxi.
"""

include "includes/codecs_stdlib.pxi"
include "cbuffer.pxi"
include "arrowjson.pxi"
include "avro.pxi"
include "avro_match.pxi"
include "text.pxi"
include "csvjson.pxi"
include "digest.pxi"
