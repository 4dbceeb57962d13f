# Declarations of the parts of librdkafka's public C API that cykafka uses.
# Only what the extension calls is declared here; the header is the reference.
from libc.stdint cimport int32_t, int64_t
from libc.stddef cimport size_t

cdef extern from "librdkafka/rdkafka.h" nogil:
    ctypedef struct rd_kafka_t
    ctypedef struct rd_kafka_conf_t
    ctypedef struct rd_kafka_topic_t
    ctypedef struct rd_kafka_topic_conf_t
    ctypedef struct rd_kafka_queue_t
    ctypedef struct rd_kafka_event_t
    ctypedef struct rd_kafka_headers_t
    ctypedef struct rd_kafka_error_t

    ctypedef enum rd_kafka_type_t:
        RD_KAFKA_PRODUCER

    ctypedef enum rd_kafka_conf_res_t:
        RD_KAFKA_CONF_OK

    ctypedef enum rd_kafka_resp_err_t:
        RD_KAFKA_RESP_ERR_NO_ERROR
        RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
        RD_KAFKA_RESP_ERR__QUEUE_FULL
        RD_KAFKA_RESP_ERR__TIMED_OUT
        RD_KAFKA_RESP_ERR__FATAL
        RD_KAFKA_RESP_ERR__PURGE_QUEUE
        RD_KAFKA_RESP_ERR__PURGE_INFLIGHT
        RD_KAFKA_RESP_ERR__STATE
        RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION
        RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
        RD_KAFKA_RESP_ERR__INVALID_ARG
        RD_KAFKA_RESP_ERR__AUTHENTICATION
        RD_KAFKA_RESP_ERR__SSL
        RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
        RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP
        RD_KAFKA_RESP_ERR_INVALID_RECORD
        RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED
        RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED
        RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED

    ctypedef enum rd_kafka_vtype_t:
        RD_KAFKA_VTYPE_RKT
        RD_KAFKA_VTYPE_PARTITION
        RD_KAFKA_VTYPE_VALUE
        RD_KAFKA_VTYPE_KEY
        RD_KAFKA_VTYPE_OPAQUE
        RD_KAFKA_VTYPE_MSGFLAGS
        RD_KAFKA_VTYPE_TIMESTAMP
        RD_KAFKA_VTYPE_HEADERS

    ctypedef struct _rd_kafka_vu_mem:
        void *ptr
        size_t size

    ctypedef union _rd_kafka_vu_u:
        const char *cstr
        rd_kafka_topic_t *rkt
        int i
        int32_t i32
        int64_t i64
        _rd_kafka_vu_mem mem
        rd_kafka_headers_t *headers
        void *ptr

    ctypedef struct rd_kafka_vu_t:
        rd_kafka_vtype_t vtype
        _rd_kafka_vu_u u

    ctypedef struct rd_kafka_message_t:
        rd_kafka_resp_err_t err
        rd_kafka_topic_t *rkt
        int32_t partition
        void *payload
        size_t len
        void *key
        size_t key_len
        int64_t offset
        void *_private

    struct rd_kafka_err_desc:
        rd_kafka_resp_err_t code
        const char *name
        const char *desc

    ctypedef enum rd_kafka_timestamp_type_t:
        RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        RD_KAFKA_TIMESTAMP_CREATE_TIME
        RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME

    int RD_KAFKA_VERSION
    int RD_KAFKA_PARTITION_UA
    int RD_KAFKA_MSG_F_COPY
    int RD_KAFKA_EVENT_DR
    int RD_KAFKA_EVENT_LOG
    int RD_KAFKA_EVENT_ERROR
    int RD_KAFKA_EVENT_STATS
    int RD_KAFKA_PURGE_F_QUEUE
    int RD_KAFKA_PURGE_F_INFLIGHT

    # version, errors
    const char *rd_kafka_version_str()
    int rd_kafka_version()
    const char *rd_kafka_err2str(rd_kafka_resp_err_t err)

    ctypedef enum rd_kafka_msg_status_t:
        RD_KAFKA_MSG_STATUS_NOT_PERSISTED
        RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED
        RD_KAFKA_MSG_STATUS_PERSISTED
    rd_kafka_msg_status_t rd_kafka_message_status(const rd_kafka_message_t *rkmessage)
    const char *rd_kafka_err2name(rd_kafka_resp_err_t err)
    rd_kafka_resp_err_t rd_kafka_last_error()
    void rd_kafka_get_err_descs(const rd_kafka_err_desc **errdescs, size_t *cntp)
    rd_kafka_resp_err_t rd_kafka_fatal_error(rd_kafka_t *rk, char *errstr, size_t errstr_size)

    rd_kafka_resp_err_t rd_kafka_error_code(const rd_kafka_error_t *error)
    const char *rd_kafka_error_string(const rd_kafka_error_t *error)
    int rd_kafka_error_is_fatal(const rd_kafka_error_t *error)
    int rd_kafka_error_is_retriable(const rd_kafka_error_t *error)
    int rd_kafka_error_txn_requires_abort(const rd_kafka_error_t *error)
    void rd_kafka_error_destroy(rd_kafka_error_t *error)

    # configuration
    rd_kafka_conf_t *rd_kafka_conf_new()
    void rd_kafka_conf_destroy(rd_kafka_conf_t *conf)
    rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                          const char *value, char *errstr,
                                          size_t errstr_size)
    rd_kafka_conf_res_t rd_kafka_conf_get(const rd_kafka_conf_t *conf, const char *name,
                                          char *dest, size_t *dest_size)
    void rd_kafka_conf_set_events(rd_kafka_conf_t *conf, int events)

    # handle
    rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                             char *errstr, size_t errstr_size)
    void rd_kafka_destroy(rd_kafka_t *rk)
    const char *rd_kafka_name(const rd_kafka_t *rk)
    rd_kafka_resp_err_t rd_kafka_set_log_queue(rd_kafka_t *rk, rd_kafka_queue_t *rkqu)

    # topics
    rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic,
                                         rd_kafka_topic_conf_t *conf)
    void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt)
    rd_kafka_topic_conf_t *rd_kafka_default_topic_conf_dup(rd_kafka_t *rk)
    void rd_kafka_topic_conf_set_opaque(rd_kafka_topic_conf_t *conf, void *rkt_opaque)
    void rd_kafka_topic_conf_set_partitioner_cb(
        rd_kafka_topic_conf_t *topic_conf,
        int32_t (*partitioner)(const rd_kafka_topic_t *rkt, const void *keydata,
                               size_t keylen, int32_t partition_cnt, void *rkt_opaque,
                               void *msg_opaque) noexcept nogil)
    const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt)

    # producing
    int rd_kafka_produce_batch(rd_kafka_topic_t *rkt, int32_t partition, int msgflags,
                               rd_kafka_message_t *rkmessages, int message_cnt)
    int rd_kafka_produce(rd_kafka_topic_t *rkt, int32_t partition, int msgflags,
                         void *payload, size_t len, const void *key, size_t keylen,
                         void *msg_opaque)
    rd_kafka_error_t *rd_kafka_produceva(rd_kafka_t *rk, const rd_kafka_vu_t *vus,
                                         size_t cnt)
    rd_kafka_resp_err_t rd_kafka_flush(rd_kafka_t *rk, int timeout_ms)
    rd_kafka_resp_err_t rd_kafka_purge(rd_kafka_t *rk, int purge_flags)
    int rd_kafka_outq_len(rd_kafka_t *rk)
    # "the latency for a produced message measured from the produce() call" (us),
    # -1 if not available (rdkafka.h).
    int64_t rd_kafka_message_latency(const rd_kafka_message_t *rkmessage)
    int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *rkmessage,
                                       rd_kafka_timestamp_type_t *tstype)
    # rd_kafka_message_errstr() "MUST NOT be used with the producer" (rdkafka.h):
    # for a delivery report it returns the message *payload* (not NUL-terminated).

    # headers
    rd_kafka_headers_t *rd_kafka_headers_new(size_t initial_count)
    void rd_kafka_headers_destroy(rd_kafka_headers_t *hdrs)
    rd_kafka_resp_err_t rd_kafka_header_add(rd_kafka_headers_t *hdrs, const char *name,
                                            ssize_t name_size, const void *value,
                                            ssize_t value_size)

    # queues and events
    rd_kafka_queue_t *rd_kafka_queue_get_main(rd_kafka_t *rk)
    void rd_kafka_queue_destroy(rd_kafka_queue_t *rkqu)
    rd_kafka_event_t *rd_kafka_queue_poll(rd_kafka_queue_t *rkqu, int timeout_ms)
    void rd_kafka_queue_yield(rd_kafka_queue_t *rkqu)
    int rd_kafka_event_type(const rd_kafka_event_t *rkev)
    void rd_kafka_event_destroy(rd_kafka_event_t *rkev)
    size_t rd_kafka_event_message_array(rd_kafka_event_t *rkev,
                                        const rd_kafka_message_t **rkmessages,
                                        size_t size)
    size_t rd_kafka_event_message_count(rd_kafka_event_t *rkev)
    rd_kafka_resp_err_t rd_kafka_event_error(rd_kafka_event_t *rkev)
    const char *rd_kafka_event_error_string(rd_kafka_event_t *rkev)
    int rd_kafka_event_error_is_fatal(rd_kafka_event_t *rkev)
    int rd_kafka_event_log(rd_kafka_event_t *rkev, const char **fac, const char **str,
                           int *level)
    const char *rd_kafka_event_stats(rd_kafka_event_t *rkev)

    # transactions
    rd_kafka_error_t *rd_kafka_init_transactions(rd_kafka_t *rk, int timeout_ms)
    rd_kafka_error_t *rd_kafka_begin_transaction(rd_kafka_t *rk)
    rd_kafka_error_t *rd_kafka_commit_transaction(rd_kafka_t *rk, int timeout_ms)
    rd_kafka_error_t *rd_kafka_abort_transaction(rd_kafka_t *rk, int timeout_ms)

    # metadata and partitioners (produce_batch groups a batch by partition)
    const rd_kafka_conf_t *rd_kafka_conf(rd_kafka_t *rk)

    ctypedef struct rd_kafka_metadata_topic_t:
        char *topic
        int partition_cnt
        rd_kafka_resp_err_t err

    ctypedef struct rd_kafka_metadata_t:
        int topic_cnt
        rd_kafka_metadata_topic_t *topics

    rd_kafka_resp_err_t rd_kafka_metadata(rd_kafka_t *rk, int all_topics,
                                          rd_kafka_topic_t *only_rkt,
                                          const rd_kafka_metadata_t **metadatap,
                                          int timeout_ms)
    void rd_kafka_metadata_destroy(const rd_kafka_metadata_t *metadata)
    rd_kafka_resp_err_t rd_kafka_query_watermark_offsets(rd_kafka_t *rk, const char *topic,
                                                         int32_t partition, int64_t *low,
                                                         int64_t *high, int timeout_ms)

    int32_t rd_kafka_msg_partitioner_consistent(const rd_kafka_topic_t *rkt,
                                                const void *key, size_t keylen,
                                                int32_t partition_cnt, void *rkt_opaque,
                                                void *msg_opaque)
    int32_t rd_kafka_msg_partitioner_consistent_random(const rd_kafka_topic_t *rkt,
                                                       const void *key, size_t keylen,
                                                       int32_t partition_cnt,
                                                       void *rkt_opaque, void *msg_opaque)
    int32_t rd_kafka_msg_partitioner_murmur2(const rd_kafka_topic_t *rkt,
                                             const void *key, size_t keylen,
                                             int32_t partition_cnt, void *rkt_opaque,
                                             void *msg_opaque)
    int32_t rd_kafka_msg_partitioner_murmur2_random(const rd_kafka_topic_t *rkt,
                                                    const void *key, size_t keylen,
                                                    int32_t partition_cnt, void *rkt_opaque,
                                                    void *msg_opaque)
    int32_t rd_kafka_msg_partitioner_fnv1a(const rd_kafka_topic_t *rkt,
                                           const void *key, size_t keylen,
                                           int32_t partition_cnt, void *rkt_opaque,
                                           void *msg_opaque)
    int32_t rd_kafka_msg_partitioner_fnv1a_random(const rd_kafka_topic_t *rkt,
                                                  const void *key, size_t keylen,
                                                  int32_t partition_cnt, void *rkt_opaque,
                                                  void *msg_opaque)
