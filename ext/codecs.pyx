# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""cykafka._codecs -- compiled encoders from Arrow columns to message bytes, apart
from the producer core (they need no librdkafka).

This file is only a hub: each codec lives in its own .pxi.
"""

import json as _json

include "arrowjson.pxi"
