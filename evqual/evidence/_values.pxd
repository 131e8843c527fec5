# Types for the compiled build of _values.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes.
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython


@cython.locals(toks=list, n=Py_ssize_t, starts=list, by_start=dict, nums=list, taken=list, i=Py_ssize_t,
               j=Py_ssize_t, k=Py_ssize_t, first=Py_ssize_t, out=list, used=list, num_at=dict, w=str, a=Py_ssize_t,
               b=Py_ssize_t, a2=Py_ssize_t, b2=Py_ssize_t, nxt=str)
cpdef list read_values(text, words=*, numbers=*)


@cython.locals(k=Py_ssize_t)
cpdef _emit(list out, list used, list toks, str key, str kind, Py_ssize_t i, Py_ssize_t j, raw=*)


cpdef bint _unit_after(list toks, Py_ssize_t j)
