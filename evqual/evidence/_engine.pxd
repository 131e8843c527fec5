# Types for the compiled build of _engine.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes: integer
# positions, and the str, list, tuple and dict the source always holds there.
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython


@cython.locals(r=object, f=list, diffs=list, keys=tuple, first=dict, i=Py_ssize_t, k=str, items=list, w_list=list,
               n_units=Py_ssize_t, present=list, arrays=list, best=Py_ssize_t, second=Py_ssize_t, status_of=dict,
               counts=dict, run=Py_ssize_t, best_run=Py_ssize_t, nb=Py_ssize_t, ev_keys=tuple, block_of=dict,
               block_len=dict, i1=Py_ssize_t, i2=Py_ssize_t, j1=Py_ssize_t, j2=Py_ssize_t, j=Py_ssize_t,
               p=str, hits=list, shared=list, nv=list, st=str, n_kind=Py_ssize_t,
               c_st=Py_ssize_t, rev=Py_ssize_t, claim_alias=set)
cpdef _read_claim(output, Py_ssize_t start, Py_ssize_t end, idx, query_keys, words=*)


@cython.locals(j=Py_ssize_t)
cpdef bint _stands_in(tuple ev_keys, Py_ssize_t j1, Py_ssize_t j2, claim_alias)


@cython.locals(x=Py_ssize_t, y=Py_ssize_t, rev=Py_ssize_t)
cpdef Py_ssize_t _reversed_pairs(list nv)


@cython.locals(j=Py_ssize_t, k=str, senses=dict, pos=dict, inner=dict)
cpdef tuple _logic_items(tuple keys, Py_ssize_t lo=*, Py_ssize_t hi=*)


@cython.locals(i=Py_ssize_t, k=str, n=Py_ssize_t)
cpdef _word_diffs(tuple keys, tuple spans, output, dict status_of, list diffs, Py_ssize_t cap=*)
