# Types for the compiled build of _checks.py (an "augmenting" .pxd: Cython reads it beside the .py source;
# the pure-Python path never sees it).  Only C types that cannot change what the Python source computes.
# A text from outside (an answer, a passage, a query) is never typed str: Cython's str accepts no subclass, and
# LangChain's message text is one (tests/test_text.py); what the code slices from it is a plain str.
cimport cython

cdef class _Item:
    cdef public str cls
    cdef public object key, info
    cdef public frozenset slot, near
    cdef public Py_ssize_t start, end, chunk, seg, pos
    cdef public str text
    cdef public object field


@cython.locals(out=list, near=list, n=Py_ssize_t, j=Py_ssize_t)
cpdef tuple _slot(list toks, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t skip_lo, Py_ssize_t skip_hi, bint names=*,
                  Py_ssize_t near_lo=*)


cpdef _number_same(_Item a, _Item b)


@cython.locals(x=str, y=str)
cpdef _disagrees(_Item a, _Item b)


@cython.locals(b=_Item, same_item=_Item, which=_Item, d=_Item, shared=Py_ssize_t, score=Py_ssize_t,
               best_same=Py_ssize_t, best_diff=Py_ssize_t, need=Py_ssize_t, labelled=bint, cands=dict)
cpdef _check_item(_Item item, ev, claim_words, query_words, claim_values=*, segs=*, out_lower=*, anchors=*)


cpdef bint _has_alpha(str s)


@cython.locals(i=Py_ssize_t)
cpdef bint _low_before(list toks, Py_ssize_t j, words)


@cython.locals(i=Py_ssize_t)
cpdef bint _words_follow(list toks, Py_ssize_t j, tuple words)


@cython.locals(n=Py_ssize_t, near_lo=Py_ssize_t, lo_j=Py_ssize_t, hi_j=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t,
               a=Py_ssize_t, b=Py_ssize_t, bb=Py_ssize_t, w=str, low=str, items=list, taken=set, covered=set,
               starts=list, century=bint, clock=bint)
cpdef _segment_items(text, Py_ssize_t start, Py_ssize_t end, bint first, Py_ssize_t chunk=*, Py_ssize_t seg=*,
                     bint field=*, neg_stems=*, toks=*, neg_pos=*, Py_ssize_t unit_start=*, words=*)


cdef class EvidenceUnits:
    cdef public list chunk_texts, spans, fields
    cdef public object chunk_words, _record
    cdef public set neg_stems, lower
    cdef public dict _toks, _neg, _stem_pos, _name_items, _seg_items, _values, _stems, _pred_items, _marked
    cdef public dict postings, words
    cdef public bint large

    @cython.locals(postings=dict, words=dict, lower=set, cs=dict, field=bint, seg=Py_ssize_t, s=Py_ssize_t,
                   e=Py_ssize_t, seen=set, lows=set, low=str, toks=list)
    cpdef _index_sentences(self)

    cpdef list tokens(self, Py_ssize_t seg)

    cpdef negated(self, Py_ssize_t seg)

    @cython.locals(k=Py_ssize_t, toks=list, items=list, index=dict, it=_Item, by_stem=dict)
    cpdef tuple segment_items(self, Py_ssize_t seg)

    cpdef frozenset seg_stems(self, Py_ssize_t seg)

    cpdef frozenset seg_values(self, Py_ssize_t seg)

    @cython.locals(postings=dict, fields=list, counts=dict)
    cpdef list _sentences_small(self, stems)

    @cython.locals(counts=dict, it=_Item, shared=Py_ssize_t, j=Py_ssize_t, stems=list, found=tuple, by_stem=dict)
    cpdef dict candidates(self, _Item item, segs=*)

    @cython.locals(got=dict, j=Py_ssize_t)
    cpdef dict stem_positions(self, Py_ssize_t seg)

    cpdef list name_items(self, str key)

    @cython.locals(got=_Item, k=Py_ssize_t, toks=list, a=Py_ssize_t, b=Py_ssize_t)
    cpdef _Item pred_item(self, Py_ssize_t seg, Py_ssize_t j)


@cython.locals(n=Py_ssize_t, k=Py_ssize_t, out=list)
cpdef list _clause_breaks(text, list toks)


@cython.locals(n=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t, clause=Py_ssize_t, neg_pos=set, breaks=list, low=str,
               t=tuple)
cpdef set _negations(text, list toks)


@cython.locals(out=dict, clause=list, breaks=list, i=Py_ssize_t, t=tuple)
cpdef dict _clause_marked(text, list toks)


cpdef bint _inside(list found, Py_ssize_t start)


@cython.locals(n=Py_ssize_t, i=Py_ssize_t, s=Py_ssize_t, e=Py_ssize_t, a=Py_ssize_t, b=Py_ssize_t, left=Py_ssize_t,
               k=Py_ssize_t, items=list, found=list, seen=set)
cpdef tuple claim_checks(output, sentences, EvidenceUnits ev, query=*, claim_spans=*, units=*, words=*)


@cython.locals(cs=dict, toks=list, a=Py_ssize_t, b=Py_ssize_t, low=str)
cpdef list _tokens(text, Py_ssize_t start, Py_ssize_t end, words=*)


cdef dict _STEM_MEMO


cpdef str stem(word)


cpdef bint _acronym(str text)


@cython.locals(i=Py_ssize_t)
cpdef bint _one_edit(str x, str y)


@cython.locals(long=list, lower=Py_ssize_t)
cpdef bint _title_case(list toks)


@cython.locals(runs=list, claim=set, keys=list, asked=bint, own=set, words=set, counts=dict, n_spans=Py_ssize_t,
               g=Py_ssize_t, h=Py_ssize_t, others=list, names=dict, first=_Item, b=_Item, o=_Item, end=_Item)
cpdef _displaced_name(list items, list toks, EvidenceUnits ev, Py_ssize_t unit_start, claim_words, query_words)


cpdef bint _no_predicate(list toks)


cpdef bint _holds_low(list toks, words)


cpdef bint _pairable(list run, words)


@cython.locals(got=_Item, it=_Item)
cpdef _Item _placed(list items, bint last)


@cython.locals(runs=list, run=list, it=_Item)
cpdef list _name_runs(list items, Py_ssize_t unit_start)


@cython.locals(names=list, together=set, a=_Item, b=_Item, between_c=list,
               pred_c=set, by_c=bint, segs_a=dict, eb=_Item, ea=_Item, etoks=list, between_e=list, pred_e=set,
               by_e=bint, ordered=bint)
cpdef _role_check(list items, list toks, EvidenceUnits ev)


@cython.locals(runs=list, names=set, claim=set, ra=list, rb=list, between=list,
               segs=set, best=Py_ssize_t, kept=Py_ssize_t, shared=Py_ssize_t, named=list, pa=list, pb=list,
               ea=_Item, eb=_Item, etoks=list, between_e=list, at=dict)
cpdef _order_swap(text, list items, list toks, EvidenceUnits ev, Py_ssize_t unit_start)


@cython.locals(it=_Item)
cpdef _Item _item(str cls, key, info, tuple slot, Py_ssize_t start, Py_ssize_t end, str text, Py_ssize_t chunk,
                  field, Py_ssize_t seg, Py_ssize_t pos)
