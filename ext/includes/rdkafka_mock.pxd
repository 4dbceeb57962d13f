# Declarations of the parts of librdkafka's mock cluster API (rdkafka_mock.h)
# that cykafka.testing uses.  The header is the 2.0.2 one; the 2.16 runtime
# exports all of it.  The header itself warns: "THIS IS AN EXPERIMENTAL API,
# SUBJECT TO CHANGE OR REMOVAL" -- only the test harness depends on it.
from libc.stdint cimport int16_t, int32_t
from libc.stddef cimport size_t
from rdkafka cimport rd_kafka_t, rd_kafka_resp_err_t


cdef extern from "librdkafka/rdkafka_mock.h" nogil:
    ctypedef struct rd_kafka_mock_cluster_t

    rd_kafka_mock_cluster_t *rd_kafka_mock_cluster_new(rd_kafka_t *rk, int broker_cnt)
    void rd_kafka_mock_cluster_destroy(rd_kafka_mock_cluster_t *mcluster)
    const char *rd_kafka_mock_cluster_bootstraps(const rd_kafka_mock_cluster_t *mcluster)

    void rd_kafka_mock_clear_request_errors(rd_kafka_mock_cluster_t *mcluster,
                                            int16_t ApiKey)
    void rd_kafka_mock_push_request_errors_array(rd_kafka_mock_cluster_t *mcluster,
                                                 int16_t ApiKey, size_t cnt,
                                                 const rd_kafka_resp_err_t *errors)

    rd_kafka_resp_err_t rd_kafka_mock_topic_create(rd_kafka_mock_cluster_t *mcluster,
                                                   const char *topic, int partition_cnt,
                                                   int replication_factor)
    rd_kafka_resp_err_t rd_kafka_mock_partition_set_leader(
        rd_kafka_mock_cluster_t *mcluster, const char *topic, int32_t partition,
        int32_t broker_id)
    rd_kafka_resp_err_t rd_kafka_mock_broker_set_down(rd_kafka_mock_cluster_t *mcluster,
                                                      int32_t broker_id)
    rd_kafka_resp_err_t rd_kafka_mock_broker_set_up(rd_kafka_mock_cluster_t *mcluster,
                                                    int32_t broker_id)
    rd_kafka_resp_err_t rd_kafka_mock_broker_set_rtt(rd_kafka_mock_cluster_t *mcluster,
                                                     int32_t broker_id, int rtt_ms)
    rd_kafka_resp_err_t rd_kafka_mock_coordinator_set(rd_kafka_mock_cluster_t *mcluster,
                                                      const char *key_type,
                                                      const char *key, int32_t broker_id)
