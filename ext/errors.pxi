# errors.pxi -- the exception tree, built from librdkafka's own error table.
#
# Every cykafka exception is a KafkaError carrying librdkafka's code, name,
# and whether it is retriable or fatal.  Subclasses also inherit the builtin a
# Python user would catch for that situation (BufferError for a full queue,
# ValueError for bad configuration, TimeoutError for timeouts, ...).


cdef dict _ERR_NAMES = {}      # code -> librdkafka name ("MSG_SIZE_TOO_LARGE", "_MSG_TIMED_OUT")
cdef dict _ERR_DESCS = {}      # code -> librdkafka description


cdef _load_error_table():
    cdef const rd_kafka_err_desc *descs
    cdef size_t cnt, i
    rd_kafka_get_err_descs(&descs, &cnt)
    for i in range(cnt):
        if descs[i].name != NULL:
            _ERR_NAMES[<int>descs[i].code] = descs[i].name.decode()
            _ERR_DESCS[<int>descs[i].code] = (descs[i].desc or b"").decode()


_load_error_table()

# Codes after which trying the same request again can succeed.  librdkafka only
# reports retriability on rd_kafka_error_t objects, not on bare codes (delivery
# reports carry bare codes), so the broker side follows Kafka's
# RetriableException subclasses and the local side the transient local errors.
_RETRIABLE_NAMES = frozenset((
    "_TRANSPORT", "_MSG_TIMED_OUT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_QUEUE_FULL",
    "_TIMED_OUT_QUEUE", "_RETRY", "_UNKNOWN_PARTITION", "_WAIT_COORD", "_PURGE_INFLIGHT",
    "UNKNOWN_TOPIC_OR_PART", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
    "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR",
    "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
    "CONCURRENT_TRANSACTIONS", "CORRUPT_MESSAGE", "THROTTLING_QUOTA_EXCEEDED",
    "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE",
    "PREFERRED_LEADER_NOT_AVAILABLE", "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    "UNSTABLE_OFFSET_COMMIT", "REBALANCE_IN_PROGRESS",
))

# Enum of every code librdkafka knows, named as librdkafka names them.  Local
# (client-side) errors have negative codes and a leading underscore in
# librdkafka; as enum members they get a LOCAL prefix instead (_MSG_TIMED_OUT
# -> LOCAL_MSG_TIMED_OUT), since enum names may not start with "_".
ErrorCode = _enum.IntEnum(
    "ErrorCode",
    [(("LOCAL" + n) if n.startswith("_") else n, c) for c, n in sorted(_ERR_NAMES.items())],
    module="cykafka",
)


def error_name(int code):
    """librdkafka's name for an error code (e.g. ``"_MSG_TIMED_OUT"``)."""
    return _ERR_NAMES.get(code) or rd_kafka_err2name(<rd_kafka_resp_err_t>code).decode()


class KafkaError(Exception):
    """Base of every cykafka error.

    Attributes: ``code`` (librdkafka's ``rd_kafka_resp_err_t``), ``name``
    (librdkafka's name for it), ``description``, ``retriable``, ``fatal`` and
    ``txn_requires_abort``.
    """

    def __init__(self, code=-1, message=None, *, retriable=None, fatal=False,
                 txn_requires_abort=False):
        self.code = int(code)
        self.name = error_name(self.code)
        self.description = _ERR_DESCS.get(self.code) or \
            rd_kafka_err2str(<rd_kafka_resp_err_t>self.code).decode()
        self.retriable = (self.name in _RETRIABLE_NAMES) if retriable is None \
            else bool(retriable)
        self.fatal = bool(fatal)
        self.txn_requires_abort = bool(txn_requires_abort)
        self.message = message if message is not None else self.description
        super().__init__(self.message)

    def __str__(self):
        flags = [f for f, on in (("fatal", self.fatal), ("retriable", self.retriable)) if on]
        tail = f" ({', '.join(flags)})" if flags else ""
        return f"[{self.name}] {self.message}{tail}"

    def __repr__(self):
        return f"{type(self).__name__}({self.name}, {self.message!r})"

    def __reduce__(self):
        return (_rebuild_error, (type(self), self.code, self.message, self.retriable,
                                 self.fatal, self.txn_requires_abort))


def _rebuild_error(cls, code, message, retriable, fatal, txn_requires_abort):
    return cls(code, message, retriable=retriable, fatal=fatal,
               txn_requires_abort=txn_requires_abort)


class KafkaDeliveryError(KafkaError):
    """A message was not delivered; raised by its future's ``result()``."""


class DeliveryTimeoutError(KafkaDeliveryError, TimeoutError):
    """A message was not delivered within ``delivery.timeout.ms``."""


class KafkaConfigError(KafkaError, ValueError):
    """A configuration property is unknown or has an invalid value."""


class QueueFullError(KafkaError, BufferError):
    """librdkafka's queue stayed full for ``max.block.ms``."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not complete in time."""


class KafkaAuthenticationError(KafkaError, PermissionError):
    """The broker refused our credentials (SASL/TLS)."""


class ProducerClosedError(KafkaError, RuntimeError):
    """The producer was used after ``close()``."""


class ProducerForkedError(KafkaError, RuntimeError):
    """The producer was created in a parent process and used after ``fork()``."""


# The one translation of librdkafka's errors into cykafka's exceptions (pyarrow's
# check_status): every error code ext/ meets -- a resp_err returned, an rd_kafka_error_t,
# an errstr of rd_kafka_new/rd_kafka_conf_set (code _INVALID_ARG) -- and every code of
# confluent-kafka's errors (cykafka.cluster.errors) becomes an exception through
# error_from_code, whose class these tables pick.  Only the producer's own states
# (closed, forked) have classes no code stands for.
_CLASSES = {
    RD_KAFKA_RESP_ERR__INVALID_ARG: KafkaConfigError,   # "Invalid argument or configuration"
    RD_KAFKA_RESP_ERR__QUEUE_FULL: QueueFullError,
    RD_KAFKA_RESP_ERR__TIMED_OUT: KafkaTimeoutError,
    RD_KAFKA_RESP_ERR__AUTHENTICATION: KafkaAuthenticationError,
    RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED: KafkaAuthenticationError,
}
# A message's delivery failed: its future's error.
_DELIVERY_CLASSES = {
    RD_KAFKA_RESP_ERR__MSG_TIMED_OUT: DeliveryTimeoutError,
}


def error_from_code(int code, str message=None, *, retriable=None, bint fatal=False,
                    bint txn_requires_abort=False, bint delivery=False):
    """cykafka's exception for librdkafka's error ``code`` (also the code of a
    confluent-kafka error): a :class:`KafkaError` of the class that code stands for,
    with ``message`` (default: librdkafka's description).  ``delivery``: the error of a
    message that was not delivered (a :class:`KafkaDeliveryError`)."""
    if delivery:
        cls = _DELIVERY_CLASSES.get(code, KafkaDeliveryError)
    else:
        cls = _CLASSES.get(code, KafkaError)
    return cls(code, message, retriable=retriable, fatal=fatal,
               txn_requires_abort=txn_requires_abort)


cdef int _check(rd_kafka_resp_err_t err, str what) except -1:
    """Raise cykafka's exception for ``err`` unless it is NO_ERROR, saying ``what``
    failed and librdkafka's text for the code."""
    if err != RD_KAFKA_RESP_ERR_NO_ERROR:
        raise error_from_code(err, f"{what}: {rd_kafka_err2str(err).decode(errors='replace')}")
    return 0


def principal(dict config):
    """Who the brokers' ACLs see for a librdkafka ``config``, as Kafka's default
    principal builder names it: ``User:<sasl.username>`` for PLAIN/SCRAM, else a
    description (a user name is not secret; nothing else of the config is read)."""
    proto = str(config.get("security.protocol") or "plaintext").lower()
    if proto.startswith("sasl"):
        mech = str(config.get("sasl.mechanisms") or config.get("sasl.mechanism")
                   or "GSSAPI").upper()
        if mech == "PLAIN" or mech.startswith("SCRAM"):
            return f"User:{config.get('sasl.username') or ''}"
        return f"the {mech} principal"
    if proto == "ssl" and any(config.get(k) for k in (
            "ssl.certificate.location", "ssl.certificate.pem", "ssl.keystore.location")):
        return "the TLS client certificate's principal"
    return "User:ANONYMOUS"


cdef str _authz_note(_Core core, int code, str topic=None):
    """What an authorization error means for this producer, naming its principal and
    the ACL it lacks ("" for other codes): the broker's own text names neither."""
    who = core.principal
    if code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        what = f"topic {topic!r}" if topic else "the topic"
        return f"{who} may not write to {what}: an ACL must allow it WRITE on the topic"
    if code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        return (f"{who} may not produce idempotently: Kafka allows it to a principal "
                f"with WRITE on any topic (or IDEMPOTENT_WRITE on the cluster)")
    if code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        tid = _conf_get(core.rk, "transactional.id")
        return (f"{who} may not use transactional.id {tid!r}: an ACL must allow it "
                f"WRITE and DESCRIBE on that transactional id")
    return ""


cdef str _size_note(_Core core, int code, str topic, size_t nbytes):
    """Why the broker refused a message as too large, and the fix ("" for other codes).
    Kafka refuses a record batch above the topic's max.message.bytes and librdkafka
    fails every message in it: with batch.size at most the topic's limit (cykafka sets
    it when it knows the topic), only a message too large alone is refused."""
    if code != RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE or topic is None:
        return ""
    limit = core.size_limits.get(topic)
    if limit is not None:
        return (f"topic {topic!r} accepts record batches of at most {limit} bytes (its "
                f"max.message.bytes) and this message alone is {nbytes} bytes of value and "
                f"key, before headers and framing: send it smaller or raise the topic's "
                f"max.message.bytes")
    return (f"the brokers refused a record batch above topic {topic!r}'s max.message.bytes "
            f"(this producer's batch.size is {_conf_get(core.rk, 'batch.size')}): name the "
            f"topic in Producer(topics=[{topic!r}]) to size batches for it")


# What librdkafka 2.16 gives each record of a batch the broker refused for another
# record's sake (ProduceResponse record_errors, KIP-467): every record of the batch fails
# with the refused record's code, and only this text tells a batch-mate from the record
# the broker named (measured on Apache Kafka 4.4; Kafka's own words, typo included).
_BATCH_MATE = ("Failed to append record because it was part of a batch which had one "
               "more more invalid records")


# librdkafka's own code for a batch-mate (rdkafka.h 2.4+, "Local: an invalid record in
# the same batch caused the failure of this message too"; Debian's 2.0.2 headers, which
# the extension compiles against, lack it).  librdkafka 2.16 gives it to some batch-mates
# and the refused record's code to others (measured on Apache Kafka 4.4: a 20,000-row
# import into 3 partitions got both), always with Kafka's _BATCH_MATE text.
cdef int _ERR_INVALID_DIFFERENT_RECORD = -138


cdef str _record_refusal(int code, str text, str topic):
    """The reason of a record refused one by one (INVALID_TIMESTAMP, INVALID_RECORD),
    or of its batch-mate; None for other codes.  The refused record's own text is not
    used: librdkafka 2.16 hands it over unreadable (measured: a few stray bytes)."""
    if (code != RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP and code != RD_KAFKA_RESP_ERR_INVALID_RECORD
            and code != _ERR_INVALID_DIFFERENT_RECORD):
        return None
    where = f"topic {topic!r}" if topic else "the topic"
    if text == _BATCH_MATE or code == _ERR_INVALID_DIFFERENT_RECORD:
        return (f"not written: the broker refused another record of its batch to {where} "
                f"({rd_kafka_err2name(<rd_kafka_resp_err_t>code).decode()}) and librdkafka "
                f"fails the whole batch; this record itself was not refused: send it again")
    if code == RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
        return (f"the broker refused this record's timestamp: it is outside {where}'s "
                f"message.timestamp.before.max.ms / message.timestamp.after.max.ms window")
    # INVALID_RECORD names no rule, and the broker's own reason does not reach us: it
    # stands for any of the topic's record rules (measured: a timestamp outside the
    # window came back INVALID_RECORD for 2 of 3 records, INVALID_TIMESTAMP for one).
    return (f"the broker refused this record as invalid for {where}: it breaks one of the "
            f"topic's record rules (a null key on a compacted topic; a timestamp outside "
            f"message.timestamp.before.max.ms / message.timestamp.after.max.ms); librdkafka "
            f"does not hand over which")


cdef str _refused_text(_Core core, int code, str topic, str sizes=""):
    """Why librdkafka would not queue a message: its words, and for a right the
    producer lacks whose and which, as a broker's refusal says (librdkafka refuses at
    the produce call once the topic's metadata answered TOPIC_AUTHORIZATION_FAILED)."""
    text = (f"{rd_kafka_err2str(<rd_kafka_resp_err_t>code).decode()} "
            f"(refused by librdkafka before sending{sizes})")
    note = _authz_note(core, code, topic)
    return f"{text}: {note}" if note else text


cdef object _refused_error(_Core core, int code, str topic, size_t vlen, size_t klen):
    """The delivery error of a message librdkafka would not queue."""
    return error_from_code(
        code, _refused_text(core, code, topic, f"; value {vlen} bytes, key {klen} bytes"),
        delivery=True)


cdef object _error_from_error_t(rd_kafka_error_t *error):
    """Build (and take ownership of) a KafkaError from an rd_kafka_error_t."""
    exc = error_from_code(rd_kafka_error_code(error),
                          rd_kafka_error_string(error).decode(errors="replace"),
                          retriable=bool(rd_kafka_error_is_retriable(error)),
                          fatal=bool(rd_kafka_error_is_fatal(error)),
                          txn_requires_abort=bool(rd_kafka_error_txn_requires_abort(error)))
    rd_kafka_error_destroy(error)  # partner: the librdkafka call that returned it
    return exc
