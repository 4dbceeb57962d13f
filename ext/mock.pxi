# mock.pxi -- _MockCluster: librdkafka's in-process mock Kafka cluster
# (rdkafka_mock.h), the engine of cykafka.testing.  It "provides a mock Kafka
# cluster with a configurable number of brokers that support a reasonable
# subset of Kafka protocol operations, error injection, etc." on localhost
# listeners "that can be used as the bootstrap servers by multiple rd_kafka_t
# instances" -- so real cykafka Producers and confluent_kafka Consumers talk to
# it over TCP exactly as to a broker.

from libc.stdlib cimport malloc, free


cdef class _MockCluster:
    """Owns a mock cluster and the librdkafka handle hosting it.  Use
    cykafka.testing.MockCluster."""

    def __cinit__(self, *args, **kwargs):
        self.rk = NULL
        self.mcluster = NULL

    def __init__(self, int num_brokers=3):
        cdef char errstr[512]
        cdef rd_kafka_conf_t *conf
        cdef rd_kafka_t *rk
        cdef rd_kafka_mock_cluster_t *mc
        if self.rk != NULL:
            raise RuntimeError("the mock cluster is already started")
        if num_brokers < 1:
            raise ValueError(f"num_brokers must be >= 1, not {num_brokers}")
        # rd_kafka_mock_cluster_new: "The rk instance is required for internal
        # book keeping but continues to operate as usual."  A producer without
        # bootstrap.servers never connects anywhere; only errors are logged
        # (to stderr: nobody serves this handle's queues).
        conf = _new_conf({"log_level": "3"})
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr))
        if rk == NULL:
            rd_kafka_conf_destroy(conf)  # rd_kafka_new owns conf only on success
            raise error_from_code(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                  f"cannot create the mock cluster's host handle: "
                                  f"{errstr.decode(errors='replace')}")
        with nogil:
            mc = rd_kafka_mock_cluster_new(rk, num_brokers)  # own thread; partner: _free
        if mc == NULL:
            with nogil:
                rd_kafka_destroy(rk)
            raise error_from_code(RD_KAFKA_RESP_ERR__STATE, "rd_kafka_mock_cluster_new failed "
                                  "(could not listen on localhost?)")
        self.rk = rk   # partner: _free, with mc
        self.mcluster = mc
        self.num_brokers = num_brokers
        self.bootstrap_servers = rd_kafka_mock_cluster_bootstraps(mc).decode()

    cdef rd_kafka_mock_cluster_t *_mc(self) except NULL:
        if self.mcluster == NULL:
            raise RuntimeError("the mock cluster is closed")
        return self.mcluster

    # Every state change below is sent to the mock cluster's thread as an op
    # and waited for (rd_kafka_mock_cluster_cmd), hence nogil.

    def create_topic(self, str topic, int partitions, int replication_factor):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef bytes t = topic.encode()
        cdef const char *tp = t
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_topic_create(mc, tp, partitions, replication_factor)
        _check(err, f"mock cluster: creating topic {topic!r} failed")

    def push_request_errors(self, int api_key, errors):
        """Queue error codes (0 = no error) for the next requests of ``api_key``
        on any broker, in order."""
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef size_t n = len(errors), i
        cdef rd_kafka_resp_err_t *arr
        if n == 0:
            return
        arr = <rd_kafka_resp_err_t *>malloc(n * sizeof(rd_kafka_resp_err_t))
        if arr == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                arr[i] = <rd_kafka_resp_err_t><int>errors[i]
            with nogil:
                rd_kafka_mock_push_request_errors_array(mc, <int16_t>api_key, n, arr)
        finally:
            free(arr)  # the mock copies the codes onto its error stack

    def clear_request_errors(self, int api_key):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        with nogil:
            rd_kafka_mock_clear_request_errors(mc, <int16_t>api_key)

    def set_broker_down(self, int32_t broker_id):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_broker_set_down(mc, broker_id)
        _check(err, f"mock cluster: taking broker {broker_id} down failed")

    def set_broker_up(self, int32_t broker_id):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_broker_set_up(mc, broker_id)
        _check(err, f"mock cluster: bringing broker {broker_id} up failed")

    def set_rtt(self, int32_t broker_id, int rtt_ms):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_broker_set_rtt(mc, broker_id, rtt_ms)
        _check(err, f"mock cluster: setting broker {broker_id}'s RTT failed")

    def set_partition_leader(self, str topic, int32_t partition, int32_t broker_id):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef bytes t = topic.encode()
        cdef const char *tp = t
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_partition_set_leader(mc, tp, partition, broker_id)
        _check(err, f"mock cluster: moving {topic}[{partition}]'s leader failed")

    def set_coordinator(self, str key_type, str key, int32_t broker_id):
        cdef rd_kafka_mock_cluster_t *mc = self._mc()
        cdef bytes kt = key_type.encode(), k = key.encode()
        cdef const char *ktp = kt
        cdef const char *kp = k
        cdef rd_kafka_resp_err_t err
        with nogil:
            err = rd_kafka_mock_coordinator_set(mc, ktp, kp, broker_id)
        _check(err, f"mock cluster: setting the {key_type} coordinator for {key!r} failed")

    @property
    def closed(self):
        return self.mcluster == NULL

    cdef bint _free(self) noexcept nogil:
        """Free the cluster and its handle, whichever are set; True if there was
        anything to free.  Without the GIL: both block while librdkafka's threads
        stop."""
        cdef rd_kafka_mock_cluster_t *mc = self.mcluster
        cdef rd_kafka_t *rk = self.rk
        self.mcluster = NULL
        self.rk = NULL
        if mc != NULL:
            rd_kafka_mock_cluster_destroy(mc)  # partner: rd_kafka_mock_cluster_new
        if rk != NULL:
            rd_kafka_destroy(rk)  # partner: rd_kafka_new in __init__
        return mc != NULL or rk != NULL

    def close(self):
        """Stop the brokers (clients connected to them see disconnects) and free
        everything.  Idempotent."""
        with nogil:
            self._free()

    def __dealloc__(self):
        cdef bint freed
        with nogil:
            freed = self._free()
        if freed:
            _warnings.warn("unclosed cykafka mock cluster; use close() or a with-block",
                           ResourceWarning)
