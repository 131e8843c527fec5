# Types for the compiled build of _lexicon.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes.
cimport cython


@cython.locals(out=list, n=Py_ssize_t, covered=dict, i=Py_ssize_t, best_len=dict, rest=tuple, k=Py_ssize_t,
               t=Py_ssize_t, same=bint)
cpdef list _match(dict first, list words)
