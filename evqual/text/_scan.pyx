# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled word scanner of :func:`evqual.text.word_spans` (issue 41).

A word is a maximal run of characters for which ``Py_UNICODE_ISALNUM`` holds: exactly what Python's ``re``
matches with ``[^\\W_]+`` in a ``str`` pattern (``re``'s word class is that test or ``_``).  With
``apostrophe``, a word followed by ``'`` and ASCII lower-case letters takes them (``[^\\W_]+(?:'[a-z]+)?``);
each character of ``symbols`` outside a word is a word of its own (``[^\\W_]+|[%$]`` for ``symbols="%$"``).
Offsets are into the whole text; the scan stays inside ``[start, end)``.  ``tests/test_text.py`` compares
the scanner with the regular expressions on random text; without a compiler the regular expressions run.
"""

from cpython.unicode cimport Py_UNICODE_ISALNUM, PyUnicode_FromObject


def scan_words(text_in, Py_ssize_t start, Py_ssize_t end, bint apostrophe=False, str symbols=None):
    """``[(start, end, word)]`` of the words of ``text[start:end]`` (see the module docstring).

    A ``str`` subclass (LangChain's ``TextAccessor``) is read as the characters it holds, as ``re`` reads it;
    the words are plain ``str``."""
    cdef str text
    if type(text_in) is str:
        text = text_in
    elif isinstance(text_in, str):
        text = PyUnicode_FromObject(text_in)  # its characters, whatever its __str__ says
    else:
        raise TypeError(f"expected a str, got {type(text_in).__name__}")
    cdef Py_ssize_t n = len(text), i, a, j
    cdef Py_UCS4 c
    if start < 0:
        start = 0
    if end > n:
        end = n
    out = []
    i = start
    while i < end:
        c = text[i]
        if not Py_UNICODE_ISALNUM(c):
            if symbols is not None and c in symbols:
                out.append((i, i + 1, text[i:i + 1]))
            i += 1
            continue
        a = i
        i += 1
        while i < end and Py_UNICODE_ISALNUM(text[i]):
            i += 1
        if apostrophe and i + 1 < end and text[i] == u"'" and u"a" <= text[i + 1] <= u"z":
            j = i + 2
            while j < end and u"a" <= text[j] <= u"z":
                j += 1
            i = j
        out.append((a, i, text[a:i]))
    return out
