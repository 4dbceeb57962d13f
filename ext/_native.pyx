# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""cykafka._native -- the compiled core of cykafka: librdkafka's producer, with a
future for every delivery and a C loop for whole columns.

This file is only a hub: each concept lives in its own .pxi.
"""

# What every .pxi may use comes first: the Python modules (includes/stdlib.pxi)
# and the Python-level constants (consts.pxi); the cdef classes, structs and C
# constants are declared in _native.pxd.  Past those, no .pxi depends on another
# being included before it: what one uses of another is a cdef function or class
# (bound when compiling) or a Python name looked up only when called.

include "includes/stdlib.pxi"
include "consts.pxi"
include "errors.pxi"
include "config.pxi"
include "delivery.pxi"
include "events.pxi"
include "stats.pxi"
include "args.pxi"
include "partitioner.pxi"
include "core.pxi"
include "stage.pxi"
include "columns.pxi"
include "grouping.pxi"
include "failures.pxi"
include "batch.pxi"
include "producer.pxi"
include "aio.pxi"
include "mock.pxi"
include "probe.pxi"
include "serialized.pxi"


def librdkafka_version():
    """The version of the librdkafka library actually loaded (e.g. "2.16.0")."""
    return rd_kafka_version_str().decode()


def librdkafka_header_version():
    """The librdkafka version whose headers the extension was compiled against."""
    return f"{RD_KAFKA_VERSION >> 24}.{(RD_KAFKA_VERSION >> 16) & 0xff}." \
           f"{(RD_KAFKA_VERSION >> 8) & 0xff}"
