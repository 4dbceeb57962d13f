# stats.pxi -- what the inspector (cykafka.inspector) reads from the extension:
#
# * librdkafka's statistics JSON (STATISTICS.md), delivered as RD_KAFKA_EVENT_STATS
#   every statistics.interval.ms.  The event thread only keeps the strings (the
#   latest, and the last minute of them for the inspector's windows) and hands
#   each to the user's stats_cb, throttled in Python to the user's own interval;
#   parsing happens off this path, when a snapshot or metrics() is asked for.
# * exact per-partition outcome counters, bumped by the delivery-report loop
#   (events.pxi).  A DR event holds the messages of one ProduceRequest, i.e.
#   one partition, so the counter lookup happens once per run of equal
#   (topic, partition), not once per message.
# * per partition, the messages batch.pxi handed over with their partition
#   given, which librdkafka's "msgs" statistic leaves out (grouping.pxi).  Each
#   statistics emit is kept with these counts as they were when it was served,
#   so the inspector adds them to that emit's "msgs".


# Unread statistics emits kept for the inspector: their age and total size.
cdef double _STATS_KEEP_S = 60.0
cdef Py_ssize_t _STATS_KEEP_BYTES = 16 << 20


cdef class _PartCount:
    """Outcomes of one partition's messages, as delivery reports arrived."""


cdef _PartCount _part_count(_Core core, const rd_kafka_topic_t *rkt, int32_t partition):
    key = (rd_kafka_topic_name(rkt).decode(errors="replace") if rkt != NULL else "",
           partition)
    cdef _PartCount pc = core.part_counts.get(key)
    if pc is None:
        pc = _PartCount.__new__(_PartCount)
        pc.last_offset = -1
        core.part_counts[key] = pc
    return pc


cdef inline void _count_dr(_PartCount pc, const rd_kafka_message_t *m) noexcept:
    if m.err:
        pc.failed += 1
    else:
        pc.delivered += 1
        if m.offset > pc.last_offset:
            pc.last_offset = m.offset


cdef object _direct_counts(_Core core):
    """{(topic, partition): messages handed over with their partition given}, None
    when there are none."""
    cdef _PartCount pc
    out = None
    for key, pc in core.part_counts.items():
        if pc.direct:
            if out is None:
                out = {}
            out[key] = pc.direct
    return out


cdef dict _part_counts_dict(_Core core):
    """{(topic, partition): (delivered, failed, last_offset)}, a consistent copy."""
    cdef _PartCount pc
    out = {}
    if core is None:
        return out
    for key, pc in list(core.part_counts.items()):
        out[key] = (pc.delivered, pc.failed, pc.last_offset)
    return out


cdef _handle_stats(_Core core, rd_kafka_event_t *ev):
    cdef const char *js = rd_kafka_event_stats(ev)
    if js == NULL:
        return
    text = js.decode(errors="replace")
    core.last_stats = text
    core.last_stats_time = _monotonic()
    core.last_direct = _direct_counts(core)
    core.stats_count += 1
    # Every emit is kept until the inspector takes it: the window statistics
    # (int_latency, rtt, batchsize...) are "reset to 0 on each stats emit"
    # (STATISTICS.md), so an emit nobody reads loses its samples.  Only the last
    # _STATS_KEEP_S matter (Java's metrics span two 30 s windows), within
    # _STATS_KEEP_BYTES; counters are cumulative and lose nothing either way.
    unread = core.stats_unread
    unread.append((core.last_stats_time, text, core.last_direct))
    core.stats_unread_bytes += len(text)
    while len(unread) > 1 and (
            core.stats_unread_bytes > _STATS_KEEP_BYTES
            or core.last_stats_time - unread[0][0] > _STATS_KEEP_S):
        core.stats_unread_bytes -= len(unread.popleft()[1])
    if core.stats_cb is not None:
        try:
            core.stats_cb(text)
        except BaseException:
            _logger.exception("cykafka: the stats callback raised")
