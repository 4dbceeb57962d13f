# consts.pxi -- the module's Python-level constants (the C ones are enums in
# _native.pxd).  Included right after includes/stdlib.pxi: every other .pxi may
# use them, even at import (a default argument).

#: Seconds an unclosed producer's flush at interpreter exit may take by default
#: (Producer(exit_timeout=...)); what is left then fails and is reported.
DEFAULT_EXIT_TIMEOUT = 5.0

# A wait with no end: None, inf, or anything beyond ~291 years (Java's
# Long.MAX_VALUE milliseconds is a common "never give up"), which in nanoseconds
# would overflow int64 and turn into "never wait".
cdef int64_t _FOREVER = 0x7fffffffffffffff
cdef double _FOREVER_S = 9.2e9

# Per-message refusals: the message fails, the producer goes on.
cdef set _PER_MESSAGE_ERRORS = {
    RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
    RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
    RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
}
