# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled word scanner of :func:`evqual.text.word_spans` (issue 41).

A word is a maximal run of characters for which ``Py_UNICODE_ISALNUM`` holds: exactly what Python's ``re``
matches with ``[^\\W_]+`` in a ``str`` pattern (``re``'s word class is that test or ``_``).  With
``apostrophe``, a word followed by ``'`` and ASCII lower-case letters takes them (``[^\\W_]+(?:'[a-z]+)?``);
each character of ``symbols`` outside a word is a word of its own (``[^\\W_]+|[%$]`` for ``symbols="%$"``).
Offsets are into the whole text; the scan stays inside ``[start, end)``.  ``tests/test_text.py`` compares
the scanner with the regular expressions on random text; without a compiler the regular expressions run.
"""

from cpython.unicode cimport Py_UNICODE_ISALNUM, Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE, PyUnicode_FromObject


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


cdef inline str _chars(text_in):
    """The characters of a ``str`` (or of a ``str`` subclass, as ``re`` reads them)."""
    if type(text_in) is str:
        return text_in
    if isinstance(text_in, str):
        return PyUnicode_FromObject(text_in)
    raise TypeError(f"expected a str, got {type(text_in).__name__}")


def has_digit(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds a character ``re``'s ``\\d`` matches (``Py_UNICODE_ISDECIMAL``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    if start < 0:
        start = 0
    if end > len(text):
        end = len(text)
    for i in range(start, end):
        if Py_UNICODE_ISDECIMAL(text[i]):
            return True
    return False


def has_alnum(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds a character ``re``'s ``[^\\W_]`` matches (``Py_UNICODE_ISALNUM``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    if start < 0:
        start = 0
    if end > len(text):
        end = len(text)
    for i in range(start, end):
        if Py_UNICODE_ISALNUM(text[i]):
            return True
    return False


def has_camel_case(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds an ASCII lower-case letter followed by an ASCII capital (``[a-z][A-Z]``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    if start < 0:
        start = 0
    if end > len(text):
        end = len(text)
    for i in range(start, end - 1):
        c = text[i]
        if u"a" <= c <= u"z":
            c = text[i + 1]
            if u"A" <= c <= u"Z":
                return True
    return False


def char_positions(text_in, Py_ssize_t start, Py_ssize_t end, str chars):
    """Offsets of the characters of ``text[start:end]`` that are in ``chars``, in order."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    if start < 0:
        start = 0
    if end > len(text):
        end = len(text)
    return [i for i in range(start, end) if text[i] in chars]


cdef inline bint _is_i(Py_UCS4 c):
    cdef unsigned int x = c
    return x == 0x69 or x == 0x49 or x == 0x130 or x == 0x131  # (re's ignored case pairs i with U+0130, U+0131)


cdef inline bint _ci(Py_UCS4 c, unsigned int low):
    """``c`` is the ASCII lower-case letter ``low`` in either case (no other character is one of them to ``re``)."""
    cdef unsigned int x = c
    return x == low or x == low - 32


def number_flags(text_in):
    """``1`` if the text holds a digit (a number can match), ``2`` if a time can (a digit followed by ``:`` and a
    digit, or by an optional white space and ``a``/``p`` in either case; or "noon" or "midnight", case ignored as
    ``re`` ignores it), or both; ``0``: neither pattern of :mod:`evqual.text._numbers` can match."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t n = len(text), i, k
    cdef Py_UCS4 c
    cdef int flags = 0
    for i in range(n):
        c = text[i]
        if Py_UNICODE_ISDECIMAL(c):
            flags |= 1
            k = i + 1
            if k + 1 < n and text[k] == u":" and Py_UNICODE_ISDECIMAL(text[k + 1]):
                return 3
            if k < n and Py_UNICODE_ISSPACE(text[k]):
                k += 1
            if k < n and (_ci(text[k], 97) or _ci(text[k], 112)):
                return 3
        elif _ci(c, 110):
            if i + 3 < n and _ci(text[i + 1], 111) and _ci(text[i + 2], 111) and _ci(text[i + 3], 110):
                flags |= 2
        elif _ci(c, 109):
            if (i + 7 < n and _is_i(text[i + 1]) and _ci(text[i + 2], 100) and _ci(text[i + 3], 110)
                    and _is_i(text[i + 4]) and _ci(text[i + 5], 103) and _ci(text[i + 6], 104)
                    and _ci(text[i + 7], 116)):
                flags |= 2
        if flags == 3:
            return 3
    return flags
