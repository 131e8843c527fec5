# Types for the compiled build of _reading.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes.
cimport cython


cpdef bint _any_consumed(list negators, set consumed)


@cython.locals(piece=str, apostrophe=bint, plain=bint, items=list, n=Py_ssize_t, covered=list, value_starts=set,
               k=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, consumed=set, negators_ending=dict, scalars=list,
               i=Py_ssize_t, j=Py_ssize_t, i2=Py_ssize_t, j2=Py_ssize_t, cls=str, sense=str, scalar=bint,
               negated=bint, low=str, tok=str, tok_starts=list)
cpdef read_span(str text, Py_ssize_t start=*, end=*, words=*)
