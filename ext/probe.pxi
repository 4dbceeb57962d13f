# probe.pxi -- a look at the cluster before an import reads any input: does it
# answer, does the topic exist, with how many partitions and records.
#
# A client of its own for a few milliseconds, in C and without the GIL (the
# import loads its readers meanwhile), instead of confluent-kafka's AdminClient:
# importing confluent_kafka cost a lines import 40-80 ms of its start-up.
#
# librdkafka 2.16 drops its bootstrap connection once the first metadata answer
# names the brokers; a request of ours still in flight on it is retried on the
# named broker, whose connection waits reconnect.backoff.ms / 2 (measured: 7 ms
# or 55 ms for the same request, about half and half): callers pass a config
# with a short backoff (cykafka._admin.short_lived).

cdef object _probe_errors(rd_kafka_t *rk):
    """The errors librdkafka reported so far (connection refused, authentication
    failed), each once, joined; "" when none."""
    cdef rd_kafka_queue_t *q = rd_kafka_queue_get_main(rk)  # partner: destroy below
    cdef rd_kafka_event_t *ev
    seen = []
    try:
        while True:
            ev = rd_kafka_queue_poll(q, 0)
            if ev == NULL:
                break
            if rd_kafka_event_type(ev) == RD_KAFKA_EVENT_ERROR:
                text = rd_kafka_event_error_string(ev).decode(errors="replace")
                if text not in seen:
                    seen.append(text)
            rd_kafka_event_destroy(ev)  # partner: rd_kafka_queue_poll above
    finally:
        rd_kafka_queue_destroy(q)
    return "; ".join(seen)


def topic_probe(dict config, str topic, double timeout, bint count_records=False):
    """``(partitions, records)`` of ``topic`` on the cluster ``config`` names
    (``bootstrap.servers`` and its security settings); ``(None, None)`` when the
    cluster has no such topic.  Every topic is listed: asking for one by name could
    create it on a broker that creates topics on use.  ``records``: the sum of the
    partitions' high watermarks when ``count_records``, else (or when the cluster
    does not say) None.  Raises KafkaError when no broker answers within ``timeout``
    seconds, naming what librdkafka reported meanwhile."""
    cdef char errstr[512]
    cdef rd_kafka_conf_t *conf
    cdef rd_kafka_t *rk
    cdef const rd_kafka_metadata_t *md = NULL
    cdef rd_kafka_resp_err_t err
    cdef int tmo = <int>max(1.0, min(timeout * 1000.0, 2147483647.0))
    cdef int32_t p, cnt = -1
    cdef int64_t lo = 0, hi = 0, held = 0
    cdef int i
    cdef bytes name = topic.encode()
    cdef const char *cname = name
    conf = _new_conf(config)
    rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_ERROR)
    # rd_kafka_new takes ownership of conf on success only.
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr))  # partner: destroy below
    if rk == NULL:
        rd_kafka_conf_destroy(conf)  # partner: _new_conf
        raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG, errstr.decode(errors="replace"))
    try:
        with nogil:
            err = rd_kafka_metadata(rk, 1, NULL, &md, tmo)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR:
            said = _probe_errors(rk)
            raise error_from_code(err, rd_kafka_err2str(err).decode(errors="replace") +
                                  (f": {said}" if said else ""))
        for i in range(md.topic_cnt):
            if md.topics[i].topic == name:
                if md.topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR:
                    cnt = md.topics[i].partition_cnt
                elif md.topics[i].err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
                    err = md.topics[i].err
                break
        rd_kafka_metadata_destroy(md)  # partner: rd_kafka_metadata above
        _check(err, f"topic {topic!r}")
        if cnt < 0:
            return (None, None)
        if not count_records:
            return (cnt, None)
        with nogil:
            for p in range(cnt):
                err = rd_kafka_query_watermark_offsets(rk, cname, p, &lo, &hi, tmo)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR:
                    break
                held += max(hi, 0)
        return (cnt, held if err == RD_KAFKA_RESP_ERR_NO_ERROR else None)
    finally:
        with nogil:
            rd_kafka_destroy(rk)  # partner: rd_kafka_new above
