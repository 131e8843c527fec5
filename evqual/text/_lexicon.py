"""Curated word lists: antonyms, quantifier and modality swaps, number words, months, weekdays.

Written by hand for evqual (no offline WordNet exists here).  They serve
contrastive augmentation (:func:`evqual.data.augment_contrastive`) and the
evidence checks; every entry is lower case.

>>> from evqual.text import ANTONYM_PAIRS, antonyms_of
>>> sorted(antonyms_of("increased"))
['declined', 'decreased']
>>> ("approved", "rejected") in ANTONYM_PAIRS
True
"""

from __future__ import annotations

__all__ = ["ANTONYM_PAIRS", "QUANTIFIER_SWAPS", "NUMBER_WORDS", "MONTHS", "WEEKDAYS", "US_STATES", "antonyms_of"]

ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"), ("increasing", "decreasing"),
    ("rise", "fall"), ("rose", "fell"), ("rising", "falling"), ("rises", "falls"), ("risen", "fallen"),
    ("higher", "lower"), ("highest", "lowest"), ("high", "low"), ("more", "less"), ("most", "least"),
    ("before", "after"), ("earlier", "later"), ("early", "late"), ("open", "closed"), ("opened", "closed"),
    ("allowed", "prohibited"), ("permitted", "banned"), ("true", "false"), ("positive", "negative"),
    ("gain", "loss"), ("gained", "lost"), ("won", "lost"), ("win", "lose"), ("wins", "loses"),
    ("winner", "loser"), ("victory", "defeat"), ("accept", "reject"), ("accepted", "rejected"),
    ("approved", "rejected"), ("approve", "reject"), ("support", "oppose"), ("supported", "opposed"),
    ("supports", "opposes"), ("legal", "illegal"), ("include", "exclude"), ("included", "excluded"),
    ("includes", "excludes"), ("maximum", "minimum"), ("first", "last"), ("above", "below"),
    ("cheap", "expensive"), ("cheaper", "more expensive"), ("large", "small"), ("larger", "smaller"),
    ("largest", "smallest"), ("major", "minor"), ("strong", "weak"), ("stronger", "weaker"), ("best", "worst"),
    ("better", "worse"), ("male", "female"), ("husband", "wife"), ("mother", "father"), ("son", "daughter"),
    ("brother", "sister"), ("north", "south"), ("northern", "southern"), ("east", "west"),
    ("eastern", "western"), ("guilty", "innocent"), ("alive", "dead"), ("start", "end"), ("started", "ended"),
    ("begin", "end"), ("began", "ended"), ("arrived", "departed"), ("arrival", "departure"), ("buy", "sell"),
    ("bought", "sold"), ("buyer", "seller"), ("agree", "disagree"), ("agreed", "disagreed"),
    ("friendly", "rude"), ("quiet", "noisy"), ("fast", "slow"), ("faster", "slower"), ("hot", "cold"),
    ("warm", "cool"), ("always", "never"), ("available", "unavailable"), ("safe", "dangerous"),
    ("safer", "riskier"), ("import", "export"), ("imports", "exports"), ("imported", "exported"),
    ("profit", "loss"), ("surplus", "deficit"), ("expand", "shrink"), ("expanded", "shrank"),
    ("upper", "lower"), ("inside", "outside"), ("indoor", "outdoor"), ("internal", "external"),
    ("young", "old"), ("younger", "older"), ("youngest", "oldest"), ("new", "old"), ("modern", "ancient"),
    ("long", "short"), ("longer", "shorter"), ("longest", "shortest"), ("wide", "narrow"),
    ("rich", "poor"), ("wealthy", "poor"), ("urban", "rural"), ("public", "private"), ("full", "empty"),
    ("success", "failure"), ("successful", "unsuccessful"), ("succeeded", "failed"), ("easy", "difficult"),
    ("easier", "harder"), ("common", "rare"), ("frequent", "rare"), ("effective", "ineffective"),
    ("increasing", "declining"), ("boost", "cut"), ("raised", "lowered"), ("raise", "lower"),
    ("add", "remove"), ("added", "removed"), ("entered", "exited"), ("hired", "fired"), ("hire", "fire"),
    ("upstream", "downstream"), ("inbound", "outbound"), ("top", "bottom"),
    ("domestic", "foreign"), ("minimum", "maximum"), ("mild", "severe"), ("acute", "chronic"),
    ("benign", "malignant"), ("wet", "dry"), ("clean", "dirty"), ("present", "absent"),
    ("present", "absent"), ("visible", "invisible"), ("permanent", "temporary"), ("optional", "mandatory"),
    ("voluntary", "mandatory"), ("free", "paid"), ("open", "shut"), ("upheld", "overturned"),
    ("uphold", "overturn"), ("upholds", "overturns"), ("strengthened", "weakened"), ("passed", "rejected"),
    ("grew", "shrank"), ("grew", "declined"), ("increased", "declined"), ("rose", "declined"), ("rose", "dropped"),
    ("gained", "dropped"), ("acquitted", "convicted"), ("allowed", "banned"), ("granted", "denied"),
)
"""Pairs of opposite words (each pair also read the other way)."""

QUANTIFIER_SWAPS: dict[str, str] = {
    "all": "some", "some": "all", "every": "some", "always": "sometimes", "sometimes": "always",
    "usually": "always", "often": "rarely", "rarely": "often", "never": "often", "many": "few", "few": "many",
    "most": "all", "none": "some", "may": "must", "might": "will", "must": "may", "can": "must",
    "could": "will", "should": "must", "likely": "certain", "possibly": "definitely", "probably": "certainly",
    "occasionally": "always", "generally": "always", "typically": "always", "several": "all",
}
"""Quantifier and modality words mapped to a word of another scope ("some" -> "all", "may" -> "must")."""

NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "hundred": 100, "dozen": 12, "half": 0,
}
"""Number words and their values ("half" maps to 0: a fraction, not a count)."""

MONTHS: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july", "august",
                           "september", "october", "november", "december")
WEEKDAYS: tuple[str, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_OPPOSITES: dict[str, frozenset] = {}
for _a, _b in ANTONYM_PAIRS:
    _OPPOSITES.setdefault(_a, set()).add(_b)
    _OPPOSITES.setdefault(_b, set()).add(_a)
_OPPOSITES = {k: frozenset(v) for k, v in _OPPOSITES.items()}


def antonyms_of(word: str) -> frozenset:
    """The opposites of a lower-case word in :data:`ANTONYM_PAIRS` (empty when none)."""
    return _OPPOSITES.get(word, frozenset())


US_STATES = {
    "AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California", "CO": "Colorado",
    "CT": "Connecticut", "DE": "Delaware", "DC": "District of Columbia", "FL": "Florida", "GA": "Georgia",
    "HI": "Hawaii", "ID": "Idaho", "IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas",
    "KY": "Kentucky", "LA": "Louisiana", "ME": "Maine", "MD": "Maryland", "MA": "Massachusetts",
    "MI": "Michigan", "MN": "Minnesota", "MS": "Mississippi", "MO": "Missouri", "MT": "Montana",
    "NE": "Nebraska", "NV": "Nevada", "NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico",
    "NY": "New York", "NC": "North Carolina", "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma",
    "OR": "Oregon", "PA": "Pennsylvania", "RI": "Rhode Island", "SC": "South Carolina", "SD": "South Dakota",
    "TN": "Tennessee", "TX": "Texas", "UT": "Utah", "VT": "Vermont", "VA": "Virginia", "WA": "Washington",
    "WV": "West Virginia", "WI": "Wisconsin", "WY": "Wyoming",
}
"""US postal codes and the states they stand for: a record's ``state: TX`` supports "Texas" in the answer
(business records, the Data2txt task, write states as codes; answers spell them out)."""
