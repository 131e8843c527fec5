# Types for the compiled build of _engine.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes: integer
# positions, and the str, list, tuple and dict the source always holds there.
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython


cdef class EvidenceIndex:
    cdef public list chunks, units, readings, unit_keys
    cdef public dict postings, _present, _unit_cache, _prefix_cache, _idf, _numbers
    cdef public object default_idf, negated

    @cython.locals(units=list, readings=list, unit_keys=list, postings=dict, keys=set, u=Py_ssize_t,
                   ci=Py_ssize_t, s=Py_ssize_t, e=Py_ssize_t)
    cpdef _read(self, words)

    @cython.locals(v=tuple, n=Py_ssize_t)
    cpdef double idf_of(self, key)

    @cython.locals(got=list)
    cpdef list numbers_of(self, Py_ssize_t u)

    @cython.locals(found=set)
    cpdef tuple present(self, key)

    @cython.locals(pos=dict, j=Py_ssize_t, canon=list)
    cpdef tuple unit_view(self, Py_ssize_t u)

    @cython.locals(ev_words=set, stripped=set)
    cpdef tuple prefix_view(self, Py_ssize_t u)


@cython.locals(r=object, f=list, diffs=list, keys=tuple, first=dict, i=Py_ssize_t, k=str, items=list, w_list=list,
               n_units=Py_ssize_t, present=list, arrays=list, best=Py_ssize_t, second=Py_ssize_t, status_of=dict,
               counts=dict, run=Py_ssize_t, best_run=Py_ssize_t, nb=Py_ssize_t, ev_keys=tuple, block_of=dict,
               block_len=dict, i1=Py_ssize_t, i2=Py_ssize_t, j1=Py_ssize_t, j2=Py_ssize_t, j=Py_ssize_t,
               p=str, hits=list, shared=list, nv=list, st=str, n_kind=Py_ssize_t,
               c_st=Py_ssize_t, rev=Py_ssize_t, claim_alias=set)
cpdef _read_claim(output, Py_ssize_t start, Py_ssize_t end, EvidenceIndex idx, query_keys, words=*)


@cython.locals(j=Py_ssize_t)
cpdef bint _stands_in(tuple ev_keys, Py_ssize_t j1, Py_ssize_t j2, claim_alias)


@cython.locals(x=Py_ssize_t, y=Py_ssize_t, rev=Py_ssize_t)
cpdef Py_ssize_t _reversed_pairs(list nv)


@cython.locals(j=Py_ssize_t, k=str, senses=dict, pos=dict, inner=dict)
cpdef tuple _logic_items(tuple keys, Py_ssize_t lo=*, Py_ssize_t hi=*)


@cython.locals(i=Py_ssize_t, k=str, n=Py_ssize_t)
cpdef _word_diffs(tuple keys, tuple spans, output, dict status_of, list diffs, Py_ssize_t cap=*)


cdef dict _ALIASES, _CANON


cpdef tuple _aliases(key)


cpdef str _canon(key)


@cython.locals(keep=list, i=Py_ssize_t, u=Py_ssize_t, n_post=Py_ssize_t)
cpdef _unit_scores(Py_ssize_t n_units, list weights, list present, list arrays, skip)


@cython.locals(n=Py_ssize_t, t=double, v=double, r0=double, r1=double, r2=double, r3=double, r4=double, r5=double,
               r6=double, r7=double, stop=Py_ssize_t, i=Py_ssize_t)
cpdef double _sum_as_numpy(list values)


cpdef Py_ssize_t _first_best(scores)


@cython.locals(top=double, second=double, x=double)
cpdef double _runner_up(scores)


@cython.locals(n=Py_ssize_t, x=double)
cpdef Py_ssize_t _at_least(scores, double bar)


cpdef tuple _ev_span(idx, reading, u, key_pred)


@cython.locals(a=Py_ssize_t, b=Py_ssize_t)
cpdef tuple _claim_span(r, output, Py_ssize_t i)


cpdef bint _any_in(keys, container)


cpdef bint _all_negated(negated, units)


cpdef tuple _blocks(claim_keys, ev_keys, ev_canon=*, ev_ids=*)

