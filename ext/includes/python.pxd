# Declarations of the CPython C API that Cython's own cpython/*.pxd do not give in
# the form cykafka needs.  They take or return objects: all need the GIL.

from cpython.ref cimport PyObject


cdef extern from "Python.h":
    # args.pxi: a str's UTF-8, cached by CPython in the object
    const char *PyUnicode_AsUTF8AndSize(object, Py_ssize_t *) except NULL
    int PyBUF_SIMPLE

    # delivery.pxi: RecordMetadata tuples made and refilled in place
    void PyObject_GC_UnTrack(object)
    object PyType_GenericAlloc(object t, Py_ssize_t nitems)
    void PyTuple_SET_ITEM(object t, Py_ssize_t i, object o)   # steals a reference to o
    PyObject *PyTuple_GET_ITEM(object t, Py_ssize_t i)   # borrowed
    Py_ssize_t Py_REFCNT(PyObject *o)

    # aio.pxi: aproduce's awaitable answers an await in C through the am_send slot
    # (PyIter_Send, which CPython's await and asyncio's Task steps call)
    ctypedef enum PySendResult:
        PYGEN_RETURN
        PYGEN_ERROR
        PYGEN_NEXT
    ctypedef PySendResult (*sendfunc)(PyObject *, PyObject *, PyObject **) noexcept
    ctypedef struct PyAsyncMethods:
        sendfunc am_send
    ctypedef struct PyTypeObject_async "PyTypeObject":
        PyAsyncMethods *tp_as_async
