# _native.pxd -- the compiled module's C-level declarations: the constants
# here, and one .pxd per concept beside the .pxi that implements it (its structs,
# enums, function-pointer types, and cdef classes with their fields and cdef
# methods).  All declared before any code, so each .pxi may use any of them
# regardless of include order.  The order below is the one Cython needs: a struct
# before the classes that hold it, a base class before its subclasses.

cimport cython
from libc.stdint cimport int32_t, int64_t, intptr_t, uint8_t
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from rdkafka cimport *
from rdkafka_mock cimport *
from sync cimport *


# The C constants.
cdef enum:
    _SUB = 65536   # messages per sub-chunk: bounds the temporary C arrays  (batch.pxi)
    # messages per rd_kafka_produce_batch call: it holds the topic's read lock
    # throughout, so metadata updates wait only briefly  (batch.pxi)
    _SLICE = 512
    _DR_CHUNK = 1024   # events.pxi
    _GROUP_MIN = 256   # smaller sub-chunks are not worth a metadata lookup  (grouping.pxi)
    # re-read a topic's partition count at most once a second  (grouping.pxi)
    _COUNT_TTL_NS = 1000000000
    _COUNT_TIMEOUT_MS = 500   # bound the lookup when brokers are down  (grouping.pxi)
    # wait_room's longest wait: how late Ctrl-C, close() or max.block.ms is noticed
    # if no room appears  (core.pxi)
    _ROOM_SLICE_NS = 10000000
    _STAGE_MAX = 256   # messages produce() hands to librdkafka in one call  (stage.pxi)
    # the longest a staged message waits for the rest of its group  (stage.pxi)
    _STAGE_AGE_NS = 1000000
    _STAGE_BYTES = 65536   # the most value bytes staged at once  (stage.pxi)
    # a hand-over names the partitions when they come in runs this long on average
    _STAGE_RUN_MIN = 16   # (stage.pxi)

include "args.pxd"
include "partitioner.pxd"
include "columns.pxd"
include "failures.pxd"
include "delivery.pxd"
include "batch.pxd"
include "events.pxd"
include "stats.pxd"
include "core.pxd"
include "producer.pxd"
include "aio.pxd"
include "mock.pxd"
