# cython: language_level=3, boundscheck=True, wraparound=False
"""The compiled word scanner of :func:`evqual.text.word_spans` (issue 41).

A word is a maximal run of characters for which ``Py_UNICODE_ISALNUM`` holds: exactly what Python's ``re``
matches with ``[^\\W_]+`` in a ``str`` pattern (``re``'s word class is that test or ``_``).  With
``apostrophe``, a word followed by ``'`` and ASCII lower-case letters takes them (``[^\\W_]+(?:'[a-z]+)?``);
each character of ``symbols`` outside a word is a word of its own (``[^\\W_]+|[%$]`` for ``symbols="%$"``).
Offsets are into the whole text; the scan stays inside ``[start, end)``.  ``tests/test_text.py`` compares
the scanner with the regular expressions on random text; without a compiler the regular expressions run.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.unicode cimport Py_UNICODE_ISALNUM, Py_UNICODE_ISDECIMAL, Py_UNICODE_ISSPACE, PyUnicode_FromObject


cdef inline bint _alnum(Py_UCS4 c):
    """``Py_UNICODE_ISALNUM``, with the ASCII range decided inline (the macro asks four Unicode tables, one
    function call each, before it says no to a space or a comma)."""
    if c < 128:
        return (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or (c >= 48 and c <= 57)
    return Py_UNICODE_ISALNUM(c)


cdef inline bint _decimal(Py_UCS4 c):
    """``Py_UNICODE_ISDECIMAL``, with the ASCII range decided inline."""
    if c < 128:
        return c >= 48 and c <= 57
    return Py_UNICODE_ISDECIMAL(c)


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
        if not _alnum(c):
            if symbols is not None and c in symbols:
                out.append((i, i + 1, text[i:i + 1]))
            i += 1
            continue
        a = i
        i = _run_end(text, i + 1, end)
        if apostrophe and i + 1 < end and text[i] == u"'" and u"a" <= text[i + 1] <= u"z":
            j = i + 2
            while j < end and u"a" <= text[j] <= u"z":
                j += 1
            i = j
        out.append((a, i, text[a:i]))
    return out


cdef inline Py_ssize_t _run_end(str text, Py_ssize_t i, Py_ssize_t end):
    """Where the run of letters and digits going on at ``i`` ends (``end`` at the latest)."""
    while i < end and _alnum(text[i]):
        i += 1
    return i


cdef inline str _chars(text_in):
    """The characters of a ``str`` (or of a ``str`` subclass, as ``re`` reads them)."""
    if type(text_in) is str:
        return text_in
    if isinstance(text_in, str):
        return PyUnicode_FromObject(text_in)
    raise TypeError(f"expected a str, got {type(text_in).__name__}")


cdef inline (Py_ssize_t, Py_ssize_t) _window(str text, Py_ssize_t start, Py_ssize_t end):
    """``[start, end)`` inside the text, as ``re`` takes a search's ``pos`` and ``endpos``."""
    return (0 if start < 0 else start), (len(text) if end > len(text) else end)


def has_digit(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds a character ``re``'s ``\\d`` matches (``Py_UNICODE_ISDECIMAL``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    start, end = _window(text, start, end)
    for i in range(start, end):
        if _decimal(text[i]):
            return True
    return False


def has_alnum(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds a character ``re``'s ``[^\\W_]`` matches (``Py_UNICODE_ISALNUM``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    start, end = _window(text, start, end)
    for i in range(start, end):
        if _alnum(text[i]):
            return True
    return False


def has_camel_case(text_in, Py_ssize_t start, Py_ssize_t end):
    """Whether ``text[start:end]`` holds an ASCII lower-case letter followed by an ASCII capital (``[a-z][A-Z]``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    start, end = _window(text, start, end)
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
    cdef Py_UCS4 c
    cdef unsigned int x
    cdef unsigned long long one = 1, low = 0, high = 0  # the ASCII characters of chars, as two bit masks
    cdef bint other = False  # whether chars holds a character past ASCII
    for c in chars:
        x = c
        if x < 64:
            low |= one << x
        elif x < 128:
            high |= one << (x - 64)
        else:
            other = True
    start, end = _window(text, start, end)
    out = []
    for i in range(start, end):
        c = text[i]
        x = c
        if x < 64:
            if (low >> x) & one:
                out.append(i)
        elif x < 128:
            if (high >> (x - 64)) & one:
                out.append(i)
        elif other and c in chars:
            out.append(i)
    return out


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
        if _decimal(c):
            flags |= 1
            k = i + 1
            if k + 1 < n and text[k] == u":" and _decimal(text[k + 1]):
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


cdef inline bint _is_word(Py_UCS4 c):
    return _alnum(c) or c == u"_"  # re's \w in a str pattern


def word_run_start(text_in, Py_ssize_t lo, Py_ssize_t end):
    """Where the run of characters ``re``'s ``[\\w.]`` matches (a letter, digit, ``_`` or ``.``) that ends at
    ``end`` starts, ``lo`` at the earliest (bounds clamped into the text): the sentence splitter's word before
    a period, read backwards."""
    cdef str text = _chars(text_in)
    cdef Py_UCS4 c
    if end > len(text):
        end = len(text)
    if lo < 0:
        lo = 0
    cdef Py_ssize_t i = end
    while i > lo:
        c = text[i - 1]
        if not (_is_word(c) or c == u"."):
            break
        i -= 1
    return i


cdef inline int _ascii_lower(Py_UCS4 c):
    """The ASCII lower-case letter ``c`` is to ``re``'s ignored case, or -1 (K for the Kelvin sign, s for the long
    s, i for the dotted and dotless capitals)."""
    cdef unsigned int x = c
    if 97 <= x <= 122:
        return x
    if 65 <= x <= 90:
        return x + 32
    if x == 0x212A:
        return 107
    if x == 0x17F:
        return 115
    if x == 0x130 or x == 0x131:
        return 105
    return -1


def has_cue_word(text_in, Py_ssize_t start, Py_ssize_t end, frozenset words, bint contraction=False):
    """Whether ``text[start:end]`` holds one of ``words`` (ASCII, lower case) as a whole word, case ignored as
    ``re`` ignores it: what ``\\b(?:w1|w2|...)\\b`` finds with ``re.IGNORECASE`` in a ``search(text, start,
    end)`` (the character before ``start`` counts for the boundary, the text ends at ``end``).  With
    ``contraction``, ``n't`` (or ``n’t``) before a word boundary counts too (``n['\u2019]t\\b``)."""
    cdef str text = _chars(text_in)
    cdef Py_ssize_t n = len(text), p, q, k, longest = 0
    cdef int low
    cdef char buf[32]
    cdef Py_UCS4 c
    for w in words:
        if type(w) is not str:  # (a checked type before the length is read)
            raise TypeError(f"cue words must be str; got {type(w).__name__}")
        if len(<str>w) > longest:
            longest = len(<str>w)
    if longest > 31:
        raise ValueError("cue words are at most 31 letters")
    if start < 0:
        start = 0
    if end > n:
        end = n
    p = start
    while p < end:
        c = text[p]
        if contraction and (c == u"n" or c == u"N") and p + 2 < end and (text[p + 1] == u"'"
                or text[p + 1] == u"\u2019") and (text[p + 2] == u"t" or text[p + 2] == u"T") and (
                p + 3 == end or not _is_word(text[p + 3])):
            return True
        if not _is_word(c) or (p > 0 and _is_word(text[p - 1])):
            p += 1
            continue
        # a word starts at p: it runs to q (the text ends at end)
        q = p
        k = 0
        while q < end and _is_word(text[q]):
            if k <= longest:
                low = _ascii_lower(text[q])
                if low < 0:
                    k = longest + 1  # a character no cue word has: read on to the word's end
                else:
                    if k < longest:
                        buf[k] = <char>low
                    k += 1
            q += 1
        if 0 < k <= longest and buf[:k].decode("ascii") in words:
            return True
        if contraction:
            p += 1  # (the contraction may end inside this word: "don't" is "don" and then "'t")
        else:
            p = q
    return False


# ---------------------------------------------------------------------------------------------- word ids
# Every word a WordBounds reads gets an integer id, the same in every text of the process: the index of one
# shared str in _WORDS (issue 41, item 1).  A word of a window is then that str, not a new one sliced from the
# text: a token is read about six times (three readers, each as written and lower-cased), and each read
# allocated a str and hashed it again at its first lookup; an interned one was hashed once, when it was met,
# and compares equal to itself by identity.  The table is bounded: past VOCAB_MAX words a new word gets no id
# (-1) and is sliced from its text as before, so that untrusted text cannot grow the process without end.

VOCAB_MAX = 1 << 18
"""The most words the process-wide table holds (262,144; about 35 MB when full: a str, its id and two table
entries a word)."""
ID_MAX_CHARS = 64
"""The longest word the table gives an id; a longer one is sliced from its text as a word of a full table is, so
that the table's size in bytes is bounded as its count of words is (a service sent words of thousands of
characters would otherwise keep each one; issue 41, session 14)."""

cdef dict _IDS = {}  # word -> id
cdef list _WORDS = []  # id -> word


cdef inline int _intern(str w):
    """``w``'s id: the one it has, or a new one while the table has room; -1 when it is full.  (No Python code
    runs between the lookup and the insertion: a str is no object the garbage collector tracks, so no
    collection, and so no other thread, can come in between.)"""
    got = _IDS.get(w)
    if got is not None:
        return <int> got
    cdef Py_ssize_t k = len(_WORDS)
    if k >= VOCAB_MAX or len(w) > ID_MAX_CHARS:
        return -1
    _WORDS.append(w)
    _IDS[w] = k
    return <int> k


def vocab_size():
    """How many words the process-wide table of word ids holds (at most :data:`VOCAB_MAX`)."""
    return len(_WORDS)


def word_of(Py_ssize_t k):
    """The word of id ``k`` (``IndexError`` for an id the table does not hold)."""
    if k < 0:
        raise IndexError(f"word id {k} is negative")
    return _WORDS[k]


cdef class WordBounds:
    """Where the words of a text are (``[^\\W_]+``, as :func:`scan_words` finds them), kept as two C arrays of
    offsets: 16 bytes a word, where a list of ``(start, end, word)`` holds about 200.  The words of a window
    are made on request, cut where the window's edge cuts one (what a scan of the window gives).  Backs
    :class:`evqual.text.TextWords` (issue 41, session 8).

    On the first request, each word gets two ids (see ``_intern``): of the word as written and lower-cased
    (8 more bytes a word).  A whole word of a window is then the table's str of its id."""

    cdef readonly str text
    cdef str lowered
    cdef bint lowered_checked
    cdef Py_ssize_t n
    cdef Py_ssize_t* starts
    cdef Py_ssize_t* ends
    cdef int* ids  # per word: the id of the word as written, then of it lower-cased (2 n ints), or NULL

    def __cinit__(self, text_in):
        cdef str text = _chars(text_in)
        self.text = text
        self.n = 0
        self.starts = NULL
        self.ends = NULL
        self.ids = NULL
        cdef Py_ssize_t size = len(text), cap = 16, i = 0, a
        cdef Py_ssize_t* grown
        self.starts = <Py_ssize_t*> PyMem_Malloc(cap * sizeof(Py_ssize_t))
        self.ends = <Py_ssize_t*> PyMem_Malloc(cap * sizeof(Py_ssize_t))
        if self.starts == NULL or self.ends == NULL:
            raise MemoryError()
        while i < size:
            if not _alnum(text[i]):
                i += 1
                continue
            a = i
            i = _run_end(text, i + 1, size)
            if self.n == cap:
                cap *= 2
                grown = <Py_ssize_t*> PyMem_Realloc(self.starts, cap * sizeof(Py_ssize_t))
                if grown == NULL:
                    raise MemoryError()
                self.starts = grown
                grown = <Py_ssize_t*> PyMem_Realloc(self.ends, cap * sizeof(Py_ssize_t))
                if grown == NULL:
                    raise MemoryError()
                self.ends = grown
            self.starts[self.n] = a
            self.ends[self.n] = i
            self.n += 1
        if self.n < cap:  # (the arrays kept as long as the text is read: no slack)
            cap = self.n if self.n else 1
            grown = <Py_ssize_t*> PyMem_Realloc(self.starts, cap * sizeof(Py_ssize_t))
            if grown != NULL:
                self.starts = grown
            grown = <Py_ssize_t*> PyMem_Realloc(self.ends, cap * sizeof(Py_ssize_t))
            if grown != NULL:
                self.ends = grown

    def __dealloc__(self):
        PyMem_Free(self.starts)
        PyMem_Free(self.ends)
        PyMem_Free(self.ids)

    cdef int _number(self) except -1:
        """Give every word its two ids (on the first request for words).  The lower-cased word is what
        ``words_in`` made before ids: a slice of the text lower-cased whole where ``_lowered`` allows it, else
        the word lowered alone."""
        cdef Py_ssize_t i, a, b, k
        cdef int cid
        cdef bint upper
        cdef str text = self.text, low = self._lowered(), w, lw
        cdef bint ascii = text.isascii()
        self.ids = <int*> PyMem_Malloc((2 * self.n if self.n else 1) * sizeof(int))
        if self.ids == NULL:
            raise MemoryError()
        for i in range(self.n):
            a = self.starts[i]
            b = self.ends[i]
            w = text[a:b]
            cid = _intern(w)
            self.ids[2 * i] = cid
            upper = True
            if ascii:  # an ASCII word without a capital is its own lower case
                upper = False
                for k in range(a, b):
                    if 65 <= <unsigned int> text[k] <= 90:
                        upper = True
                        break
            if not upper:
                self.ids[2 * i + 1] = cid
                continue
            lw = low[a:b] if low is not None else w.lower()
            self.ids[2 * i + 1] = cid if (cid >= 0 and lw == w) else _intern(lw)
        return 0

    def ids_in(self, Py_ssize_t start, Py_ssize_t end, bint lower=True):
        """The ids of the whole words inside ``text[start:end]`` (lower-cased with ``lower``), as a list of
        ints; a word the window's edge cuts, or one the full table gave no id, is -1."""
        cdef Py_ssize_t i, j
        start, end, i, j = self._clamped(start, end)
        out = []
        if i >= j:
            return out
        if self.ids == NULL:
            self._number()
        while i < j:
            if self.starts[i] < start or self.ends[i] > end:
                out.append(-1)
            else:
                out.append(self.ids[2 * i + (1 if lower else 0)])
            i += 1
        return out

    def __len__(self):
        return self.n

    cdef inline Py_ssize_t _first_ending_after(self, Py_ssize_t start):
        """The first word whose end is past ``start`` (``bisect_right`` on the ends)."""
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.ends[mid] <= start:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef inline Py_ssize_t _first_starting_at(self, Py_ssize_t end):
        """The first word starting at ``end`` or later (``bisect_left`` on the starts)."""
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.starts[mid] < end:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef inline (Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t) _clamped(self, Py_ssize_t start, Py_ssize_t end):
        """``(start, end, i, j)``: the window clamped into the text and the words ``i`` to ``j - 1`` it overlaps
        (``i == j`` when none, an empty window included)."""
        cdef Py_ssize_t size = len(self.text)
        if start < 0:
            start = 0
        if end > size:
            end = size
        if start >= end:
            return start, end, 0, 0
        return start, end, self._first_ending_after(start), self._first_starting_at(end)

    def window(self, Py_ssize_t start, Py_ssize_t end):
        """``(i, j)``: words ``i`` to ``j - 1`` overlap ``text[start:end]``."""
        return self._first_ending_after(start), self._first_starting_at(end)

    def words_in(self, Py_ssize_t start, Py_ssize_t end, bint lower=False, bint spans=True):
        """The words of ``text[start:end]``: ``(start, end, word)`` each (``spans``), else the word alone;
        lower-cased with ``lower``.  Bounds are clamped into the text."""
        cdef Py_ssize_t i, j, a, b
        start, end, i, j = self._clamped(start, end)
        out = []
        if i >= j:
            return out
        cdef str text = self.text
        cdef str w
        cdef str low = self._lowered() if lower else None
        cdef int k
        cdef list table = _WORDS
        if self.ids == NULL:
            self._number()
        while i < j:
            a = self.starts[i]
            b = self.ends[i]
            if a >= start and b <= end:
                k = self.ids[2 * i + (1 if lower else 0)]
                if k >= 0:  # the whole word: the table's str
                    w = <str> table[k]
                    out.append((a, b, w) if spans else w)
                    i += 1
                    continue
            if a < start:
                a = start
            if b > end:
                b = end
            if low is not None:
                w = low[a:b]
            else:
                w = text[a:b]
                if lower:
                    w = w.lower()
            out.append((a, b, w) if spans else w)
            i += 1
        return out

    cdef str _lowered(self):
        """The text lower-cased whole, when each word of it lowers as it does alone, character for character:
        always but for "İ" (U+0130, two characters lower-cased) and the capital sigma (lower-cased by what
        stands around it); ``None`` for a text with either, whose words are lower-cased one by one."""
        if not self.lowered_checked:
            self.lowered_checked = True
            if u"\u0130" not in self.text and u"\u03a3" not in self.text:
                self.lowered = self.text.lower()
        return self.lowered
