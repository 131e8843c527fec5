# Types for the compiled build of _reading.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes.
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython


cpdef bint _any_consumed(list negators, set consumed)


@cython.locals(piece=str, apostrophe=bint, plain=bint, items=list, n=Py_ssize_t, covered=list, value_starts=set,
               k=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, consumed=set, negators_ending=dict, scalars=list,
               i=Py_ssize_t, j=Py_ssize_t, i2=Py_ssize_t, j2=Py_ssize_t, cls=str, sense=str, scalar=bint,
               negated=bint, low=str, tok=str, tok_starts=list, key=str,
               word_keys=dict, name_keys=dict, m=Py_ssize_t)
cpdef read_span(text, Py_ssize_t start=*, end=*, words=*)
