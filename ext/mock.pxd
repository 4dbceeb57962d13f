# mock.pxd -- librdkafka's mock cluster; implemented in mock.pxi.

@cython.final
cdef class _MockCluster:
    cdef rd_kafka_t *rk                        # hosts the cluster; never produces
    cdef rd_kafka_mock_cluster_t *mcluster
    cdef readonly int num_brokers
    cdef readonly str bootstrap_servers
    cdef rd_kafka_mock_cluster_t *_mc(self) except NULL
    cdef bint _free(self) noexcept nogil
