# stats.pxi -- librdkafka's statistics JSON (STATISTICS.md), delivered as
# RD_KAFKA_EVENT_STATS every statistics.interval.ms.  The event thread only
# keeps the latest string and hands it to the user's stats_cb; parsing
# happens off this path, when somebody asks for it.


cdef _handle_stats(_Core core, rd_kafka_event_t *ev):
    cdef const char *js = rd_kafka_event_stats(ev)
    if js == NULL:
        return
    text = js.decode(errors="replace")
    core.last_stats = text
    core.last_stats_time = _monotonic()
    core.stats_count += 1
    if core.stats_cb is not None:
        try:
            core.stats_cb(text)
        except BaseException:
            _logger.exception("cykafka: the stats callback raised")
