# stats.pxd -- per-partition counts of what cykafka handed over itself;
# implemented in stats.pxi.

@cython.final
cdef class _PartCount:
    cdef public int64_t delivered, failed
    cdef public int64_t last_offset   # offset of the last acknowledged message, -1: none yet
    cdef public int64_t direct        # handed over to this partition by batch.pxi (not in "msgs")
