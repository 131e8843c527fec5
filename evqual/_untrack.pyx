# cython: language_level=3, boundscheck=False, wraparound=False
"""Containers the cyclic garbage collector never needs to walk, untracked when they are made (issue 41).

A new context left thousands of tracked containers in the context cache (item keys, postings, token rows,
the checks' items), and the collections after they were made walked every one of them: about a millisecond,
a tenth of scoring an answer to a new context (``scripts/bench.py score --new-contexts`` reports it).  Most are tuples and frozensets of strings and
numbers.  Such a container can never be part of a reference cycle, so CPython's own collector untracks tuples
like these once it has walked them (``untrack_tuples``); this does it when they are made, and does it for
frozensets too, which CPython never untracks.

Only exact tuples, frozensets and dicts are untracked, and only when nothing they hold is tracked (a string, a
number, a numpy array, or a container untracked before).  That is the collector's own rule for a tuple, except
that CPython counts any container but a tuple as possibly tracked; here an untracked one counts as untracked
(a context's items, :func:`untrack_settled`).  So these functions are only for what no code changes once it is
made: the caches of a context.  A dict tracks itself again when any container is put in it, and a
container holding anything tracked stays tracked.  Without a compiler
:func:`evqual._gcpause.untrack_atomic` does nothing, which changes no result: the collector walks them as before.
"""

from cpython.object cimport PyObject, PyTypeObject, visitproc

cdef extern from "Python.h":
    int PyObject_GC_IsTracked(object)
    void PyObject_GC_UnTrack(void*)
    bint PyTuple_CheckExact(object)
    bint PyFrozenSet_CheckExact(object)
    bint PyDict_CheckExact(object)


cdef bint _untrack(object o, int depth):
    """Untrack ``o`` when it is an exact tuple, frozenset or dict holding nothing tracked (the tuples and
    frozensets it holds untracked first, ``depth`` levels down); whether it is untracked now.

    CPython's collector untracks such dicts itself (``_PyDict_MaybeUntrack``), and a dict tracks itself again
    when a container is put in it; a tuple or frozenset cannot change."""
    if not PyObject_GC_IsTracked(o):
        return True
    if PyDict_CheckExact(o):
        for k, v in (<dict> o).items():
            if PyObject_GC_IsTracked(k) or (PyObject_GC_IsTracked(v) and (depth <= 0 or not _untrack(v, depth - 1))):
                return False
        PyObject_GC_UnTrack(<void*> o)
        return True
    if not (PyTuple_CheckExact(o) or PyFrozenSet_CheckExact(o)):
        return False
    for x in o:
        if PyObject_GC_IsTracked(x) and (depth <= 0 or not _untrack(x, depth - 1)):
            return False
    PyObject_GC_UnTrack(<void*> o)
    return True


def untrack_atomic(objs):
    """Untrack each tuple, frozenset or dict of ``objs`` that holds nothing tracked (tuples, frozensets and
    dicts inside it, three levels down, untracked first); returns how many of ``objs`` are untracked now."""
    cdef Py_ssize_t n = 0
    for o in objs:
        if _untrack(o, 3):
            n += 1
    return n


cdef int _note_tracked(PyObject* x, void* found) except -1:
    """The collector's visit function: note a referent it tracks."""
    if PyObject_GC_IsTracked(<object> x):
        (<int*> found)[0] = 1
    return 0


def untrack_settled(objs):
    """Untrack each object of ``objs`` whose references (what the collector visits) are all untracked now: an
    object that can be in no reference cycle as long as nothing it holds is replaced.  For the cached instances
    of evqual's own classes that no code changes once made (a context's items); returns how many of ``objs``
    are untracked now."""
    cdef Py_ssize_t n = 0
    cdef int found
    cdef PyTypeObject* tp
    for o in objs:
        if not PyObject_GC_IsTracked(o):
            n += 1
            continue
        tp = (<PyObject*> o).ob_type
        if tp.tp_traverse is NULL:
            continue
        found = 0
        tp.tp_traverse(<PyObject*> o, <visitproc> _note_tracked, &found)
        if not found:
            PyObject_GC_UnTrack(<void*> o)
            n += 1
    return n
