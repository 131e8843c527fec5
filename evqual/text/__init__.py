"""Text primitives: tokens, sentences, numbers and entities (all deterministic)."""

from ._claims import (
    CLAIM_BACKENDS,
    SpacyClaimSplitter,
    claim_units_from_boundaries,
    sentence_claims,
    split_claims,
)
from ._entities import (
    ENTITY_BACKENDS,
    SPACY_MODEL,
    Entity,
    RegexEntityExtractor,
    SpacyEntityExtractor,
    make_entity_extractor,
    require_spacy,
    spacy_available,
)
from ._language import FUNCTION_WORDS, LANGUAGE_WARNING_CODE, language_signal, language_warning
from ._lexicon import ANTONYM_PAIRS, MONTHS, NUMBER_WORDS, QUANTIFIER_SWAPS, US_STATES, WEEKDAYS, antonyms_of
from ._numbers import NumberMention, context_number_values, extract_numbers, normalize_number
from ._sentences import MAX_SENTENCE_CHARS, split_sentences
from ._stem import STEMMER_BACKENDS, english_stemmer, stemmer_backend
from ._tokens import (STOP_WORDS, TOKEN_PATTERN, char_positions, content_tokens, has_alnum, has_camel_case,
                      has_cue_word, has_digit, token_spans, tokenize, word_spans)
from ._words import TextWords

__all__ = [
    "FUNCTION_WORDS",
    "LANGUAGE_WARNING_CODE",
    "language_signal",
    "language_warning",
    "US_STATES",
    "CLAIM_BACKENDS",
    "SpacyClaimSplitter",
    "claim_units_from_boundaries",
    "sentence_claims",
    "split_claims",
    "ANTONYM_PAIRS",
    "MONTHS",
    "NUMBER_WORDS",
    "QUANTIFIER_SWAPS",
    "WEEKDAYS",
    "antonyms_of",
    "ENTITY_BACKENDS",
    "SPACY_MODEL",
    "STOP_WORDS",
    "TOKEN_PATTERN",
    "Entity",
    "NumberMention",
    "RegexEntityExtractor",
    "SpacyEntityExtractor",
    "content_tokens",
    "context_number_values",
    "extract_numbers",
    "make_entity_extractor",
    "normalize_number",
    "require_spacy",
    "spacy_available",
    "split_sentences",
    "MAX_SENTENCE_CHARS",
    "STEMMER_BACKENDS",
    "english_stemmer",
    "stemmer_backend",
    "token_spans",
    "tokenize",
    "word_spans",
    "TextWords",
    "has_digit",
    "has_alnum",
    "has_camel_case",
    "char_positions",
    "has_cue_word",
]
