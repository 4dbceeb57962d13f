# Declarations of the POSIX clocks, threads and GCC atomics that cykafka uses
# for what the GIL cannot do: tell time and wake a thread that waits without it
# (core.pxi's room signal, stage.pxi's hand-over).

from libc.stdint cimport int32_t, int64_t


cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    int CLOCK_MONOTONIC


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_mutexattr_t:
        pass
    ctypedef struct pthread_cond_t:
        pass
    ctypedef struct pthread_condattr_t:
        pass
    int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
    int pthread_mutex_destroy(pthread_mutex_t *m)
    int pthread_mutex_lock(pthread_mutex_t *m)
    int pthread_mutex_unlock(pthread_mutex_t *m)
    int pthread_condattr_init(pthread_condattr_t *attr)
    int pthread_condattr_setclock(pthread_condattr_t *attr, int clock_id)
    int pthread_condattr_destroy(pthread_condattr_t *attr)
    int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
    int pthread_cond_destroy(pthread_cond_t *c)
    int pthread_cond_broadcast(pthread_cond_t *c)
    int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const timespec *abstime)
    int pthread_atfork(void (*prepare)() noexcept nogil, void (*parent)() noexcept nogil,
                       void (*child)() noexcept nogil)


# GCC's __atomic builtins, typed for the words cykafka shares between threads.
cdef extern from * nogil:
    int __ATOMIC_ACQUIRE
    int __ATOMIC_RELEASE
    int __ATOMIC_SEQ_CST
    unsigned long atomic_load_ulong "__atomic_load_n"(const unsigned long *p, int order)
    void atomic_store_ulong "__atomic_store_n"(unsigned long *p, unsigned long v, int order)
    int atomic_load_int "__atomic_load_n"(const int *p, int order)
    int32_t atomic_load_i32 "__atomic_load_n"(const int32_t *p, int order)
    void atomic_store_i32 "__atomic_store_n"(int32_t *p, int32_t v, int order)
    bint atomic_cas_i32 "__atomic_compare_exchange_n"(int32_t *p, int32_t *expected,
                                                      int32_t desired, bint weak,
                                                      int success, int failure)
    void atomic_store_int "__atomic_store_n"(int *p, int v, int order)
    int64_t atomic_load_i64 "__atomic_load_n"(const int64_t *p, int order)
    void atomic_store_i64 "__atomic_store_n"(int64_t *p, int64_t v, int order)
