# serialized.pxi -- produce serialized rows, some of which were rejected.
#
# A serializer turns a batch into one binary column plus the rows that did not
# fit the schema.  Those rows must fail on their own (the batch future reports
# them with the reason), the others go out in order through the batch path:
# each run of good rows between two rejected ones is one _enqueue.

def produce_serialized(NativeProducer producer, topic, chunks, on_delivery=None):
    """``chunks`` yields (values, keys, partitions, timestamps, headers, rejected):
    values/keys are columns as produce_batch takes them, partitions/timestamps/
    headers None or sliceable per message, rejected a list of (row, message)
    sorted by row.  Returns one BatchFuture over all chunks."""
    cdef _Core core = producer._usable()
    cdef _Topic t = _entered_topic(core, topic)
    cdef Py_ssize_t base = 0, n, start, stop, done = 0
    cdef _Column vcol, kcol
    cdef _IntColumn pcol, tcol
    if on_delivery is not None and not callable(on_delivery):
        raise TypeError(f"on_delivery must be callable, not {type(on_delivery).__name__}")
    bf = _new_batch_future(t.name, on_delivery)
    try:
        for values, keys, parts, tss, hdrs, rejected in chunks:
            n = len(values)
            bf._total += n
            start = 0
            for row, message in list(rejected) + [(n, None)]:
                stop = row
                done = base + start
                if stop > start:
                    vcol = _column(values[start:stop], "values")
                    kcol = _column(keys[start:stop], "keys") if keys is not None else None
                    pcol = _int_column(parts[start:stop], stop - start, "partitions", True) \
                        if parts is not None else None
                    tcol = _int_column(tss[start:stop], stop - start, "timestamps", False) \
                        if tss is not None else None
                    hlist = _headers_column(hdrs[start:stop], stop - start) \
                        if hdrs is not None else None
                    done = base + stop   # _enqueue accounts for its whole range, even failing
                    _enqueue(core, t, bf, base + start, vcol, kcol, pcol, tcol, hlist)
                if message is not None:
                    done = base + row + 1
                    core.produced += 1
                    core.failed += 1
                    bf._record_failure(base + row, error_from_code(
                        RD_KAFKA_RESP_ERR__INVALID_ARG, f"row {base + row}: {message}",
                        delivery=True), -1)
                start = row + 1
            base += n
            done = base
    except BaseException as exc:
        _fail_range(core, bf, done, bf._total, exc)
        _seal_batch(bf, exc)
        raise
    _seal_batch(bf)
    return bf


cdef tuple _serialize_one(object topic, object value, object key, object headers,
                          object value_serializer, object key_serializer):
    """produce()'s serializers (kept out of its fast path): confluent's calling
    convention, ``ser(obj, SerializationContext(topic, field, headers))``."""
    from confluent_kafka.serialization import MessageField, SerializationContext
    if value_serializer is not None:
        value = value_serializer(value, SerializationContext(topic, MessageField.VALUE,
                                                             headers))
    if key_serializer is not None:
        key = key_serializer(key, SerializationContext(topic, MessageField.KEY, headers))
    return value, key
