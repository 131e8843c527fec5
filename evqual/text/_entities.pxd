# Types for the compiled build of _entities.py (an "augmenting" .pxd: Cython reads it beside the .py source; the
# pure-Python path never sees it).  Only C types that cannot change what the Python source computes (a
# character's isupper, isdigit and isalpha are the str methods' own tests of a one-character string).
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython


@cython.locals(core=str, i=Py_ssize_t, c=Py_UCS4, digit=bint, alpha=bint)
cpdef bint _is_special(str word)


@cython.locals(ents=list, first_visible=Py_ssize_t, at_start=bint, group=str, low=str, words=list, pieces=list,
               p_i=Py_ssize_t)
cpdef list _sentence_entities(text, Py_ssize_t s_start, Py_ssize_t s_end, lower_words)


@cython.locals(lo=Py_ssize_t, hi=Py_ssize_t, w=str, start=Py_ssize_t, end=Py_ssize_t, trimmed=str)
cpdef _run_entity(lower_words, list words, bint at_start)
