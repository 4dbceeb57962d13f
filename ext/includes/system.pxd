# Declarations of the POSIX calls cykafka makes besides threads and clocks (sync.pxd).

cdef extern from "<unistd.h>" nogil:
    int usleep(unsigned int usec)


# events.pxi: finding a symbol in the librdkafka actually loaded.
cdef extern from "<dlfcn.h>" nogil:
    ctypedef struct Dl_info:
        const char *dli_fname
    int dladdr(const void *addr, Dl_info *info)
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int RTLD_LAZY
    int RTLD_NOLOAD
