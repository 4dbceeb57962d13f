# config.pxi -- turning a Python dict into an rd_kafka_conf_t.


cdef bytes _conf_value(str key, object value):
    """librdkafka takes every property as a string; spell Python values its way."""
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, str):
        return (<str>value).encode()
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        # "5.0" is not an integer to librdkafka; integral floats are written as ints.
        return (str(int(value)) if value == int(value) else repr(value)).encode()
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ",".join(value).encode()
    raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                          f"config property {key!r}: value of type "
                          f"{type(value).__name__} is not a str, int, float or bool")


cdef rd_kafka_conf_t *_new_conf(dict config, tuple secrets=()) except NULL:
    """A new rd_kafka_conf_t holding ``config``; the caller owns it.  ``secrets``
    (found by cykafka.config.secrets, the one rule for what is secret) are masked
    in librdkafka's error text, longest first."""
    cdef char errstr[512]
    cdef rd_kafka_conf_t *conf = rd_kafka_conf_new()
    cdef rd_kafka_conf_res_t res
    cdef bytes bkey, bvalue
    try:
        for key, value in config.items():
            if not isinstance(key, str):
                raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                      f"config keys must be str, not {type(key).__name__}"
                                      f" ({key!r})")
            bkey = (<str>key).encode()
            bvalue = _conf_value(key, value)
            res = rd_kafka_conf_set(conf, bkey, bvalue, errstr, sizeof(errstr))
            if res != RD_KAFKA_CONF_OK:
                reason = errstr.decode(errors="replace")
                for secret in secrets:
                    reason = reason.replace(secret, "***")
                raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                      f"config property {key!r}: {reason}")
    except BaseException:
        rd_kafka_conf_destroy(conf)  # partner: rd_kafka_conf_new above
        raise
    return conf


cdef _conf_set(rd_kafka_conf_t *conf, str key, str value):
    cdef char errstr[512]
    if rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr,
                         sizeof(errstr)) != RD_KAFKA_CONF_OK:
        raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                              f"config property {key!r}: {errstr.decode(errors='replace')}")


cdef object _conf_get(rd_kafka_t *rk, str key):
    """The value librdkafka is running with for ``key`` (after its own adjustments,
    e.g. max.in.flight lowered to 5 for idempotence), or None if it has none."""
    if rk == NULL:
        return None
    return _conf_lookup(rd_kafka_conf(rk), key)


cdef object _conf_lookup(const rd_kafka_conf_t *conf, str key):
    """``key``'s value in ``conf`` as librdkafka spells it (booleans "true"/"false"),
    or None."""
    cdef char buf[512]
    cdef size_t size = sizeof(buf)
    if rd_kafka_conf_get(conf, key.encode(), buf, &size) != RD_KAFKA_CONF_OK:
        return None
    return buf[:max(<Py_ssize_t>size - 1, 0)].decode(errors="replace")


def config_refusal(dict config, tuple secrets=()):
    """librdkafka's reason for refusing a producer built from ``config``, or None when
    it builds one.  Asks librdkafka itself (every property set, then rd_kafka_new), so
    a refusal predicted from its documented ranges cannot drift from what it does.
    The caller leaves out what acts on the outside world (brokers, files, plugins);
    ``secrets`` are masked in the reason, as for a Producer."""
    cdef char errstr[512]
    cdef rd_kafka_conf_t *conf
    cdef rd_kafka_t *rk
    try:
        conf = _new_conf(config, secrets)
    except KafkaConfigError as exc:
        return exc.message
    # rd_kafka_new takes ownership of conf on success only.
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr))  # partner: below
    if rk == NULL:
        rd_kafka_conf_destroy(conf)  # partner: _new_conf
        reason = errstr.decode(errors="replace")
        for secret in secrets:
            reason = reason.replace(secret, "***")
        return reason
    with nogil:
        rd_kafka_destroy(rk)  # partner: rd_kafka_new above
    return None
