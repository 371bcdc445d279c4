"""The English Snowball (Porter2) stemmer and mongod's English stop words, in pure Python.

mongod stems ``$text`` terms with libstemmer's English stemmer, which is the classic Porter2
algorithm published at snowballstem.org (exceptional words, R1 with the ``gener``/``commun``/
``arsen`` prefixes, R2, steps 0/1a, 1b, 1c, 2, 3, 4 and 5). This module follows that
algorithm step by step so that the simulator's index terms and query terms are the ones
mongod computes ("running", "runs" and "run" all become "run"). Snowball 3 (2025) revised
the English rules (more R1 prefixes, new exceptions); mongod ships the classic rules, so
these are the ones kept here.

:func:`stem` expects a lower-case word (mongod folds case and diacritics first).
"""

from __future__ import annotations

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")
_R1_PREFIXES = ("gener", "commun", "arsen")

_EXCEPTIONS = {
    "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
    "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli",
    "singly": "singl", "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas",
    "cosmos": "cosmos", "bias": "bias", "andes": "andes",
}
_AFTER_1A_INVARIANTS = frozenset({"inning", "outing", "canning", "herring", "earring",
                                  "proceed", "exceed", "succeed"})

_STEP_2 = (
    ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"),
    ("entli", "ent"), ("ation", "ate"), ("alism", "al"), ("aliti", "al"), ("ousli", "ous"),
    ("iviti", "ive"), ("fulli", "ful"), ("enci", "ence"), ("anci", "ance"), ("abli", "able"),
    ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"), ("ogi", "og"),
    ("li", ""),
)
_STEP_3 = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"),
    ("iciti", "ic"), ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
)
_STEP_4 = ("ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti",
           "ous", "ive", "ize", "ion", "al", "er", "ic")

# mongod's src/mongo/db/fts/stop_words_english.txt (entries with an apostrophe never match a
# token, since the tokenizer splits words there, but they are kept as mongod lists them).
STOP_WORDS = frozenset("""a about above after again against all am an and any are aren't as
at be because been before being below between both but by can't cannot could couldn't did
didn't do does doesn't doing don't down during each few for from further had hadn't has
hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
mustn't my myself no nor not of off on once only or other ought our ours ourselves out over
own same shan't she she'd she'll she's should shouldn't so some such than that that's the
their theirs them themselves then there there's these they they'd they'll they're they've
this those through to too under until up very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's which while who who's whom why why's with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves""".split())


def _is_vowel(word: str, i: int) -> bool:
    return word[i] in _VOWELS


def _regions(word: str) -> tuple[int, int]:
    """R1 and R2 as start offsets (len(word) for an empty region)."""
    def after_vowel_consonant(start: int) -> int:
        i = start
        while i < len(word) and not _is_vowel(word, i):
            i += 1
        while i < len(word) and _is_vowel(word, i):
            i += 1
        return min(i + 1, len(word)) if i < len(word) else len(word)

    prefix = next((p for p in _R1_PREFIXES if word.startswith(p)), None)
    r1 = len(prefix) if prefix else after_vowel_consonant(0)
    return r1, after_vowel_consonant(r1)


def _short_syllable_at_end(word: str) -> bool:
    """True when ``word`` ends in a short syllable: non-vowel, vowel, non-vowel other than
    w, x or Y; or a vowel at the start followed by a non-vowel."""
    n = len(word)
    if n >= 3 and (not _is_vowel(word, n - 3) and _is_vowel(word, n - 2)
                   and not _is_vowel(word, n - 1) and word[n - 1] not in "wxY"):
        return True
    return n == 2 and _is_vowel(word, 0) and not _is_vowel(word, 1)


def _has_vowel(text: str) -> bool:
    return any(c in _VOWELS for c in text)


def _step_1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ied", "ies")):
        return word[:-2] if len(word) > 4 else word[:-1]
    if word.endswith(("us", "ss")):
        return word
    if word.endswith("s") and _has_vowel(word[:-2]):
        return word[:-1]
    return word


def _step_1b(word: str, r1: int) -> str:
    for suffix in ("eedly", "eed"):
        if word.endswith(suffix):
            return word[:-len(suffix)] + "ee" if len(word) - len(suffix) >= r1 else word
    for suffix in ("ingly", "edly", "ing", "ed"):
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            if not _has_vowel(stem):
                return word
            if stem.endswith(("at", "bl", "iz")):
                return stem + "e"
            if stem.endswith(_DOUBLES):
                return stem[:-1]
            if r1 == len(stem) and _short_syllable_at_end(stem):
                return stem + "e"
            return stem
    return word


def _step_1c(word: str) -> str:
    if len(word) > 2 and word[-1] in "yY" and not _is_vowel(word, len(word) - 2):
        return word[:-1] + "i"
    return word


def _step_2(word: str, r1: int) -> str:
    for suffix, replacement in _STEP_2:
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            if len(stem) < r1:
                return word
            if suffix == "ogi" and not stem.endswith("l"):
                return word
            if suffix == "li" and not (stem and stem[-1] in _LI_ENDINGS):
                return word
            return stem + replacement
    return word


def _step_3(word: str, r1: int, r2: int) -> str:
    for suffix, replacement in _STEP_3:
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            if len(stem) < r1 or (suffix == "ative" and len(stem) < r2):
                return word
            return stem + replacement
    return word


def _step_4(word: str, r2: int) -> str:
    for suffix in _STEP_4:
        if word.endswith(suffix):
            stem = word[:-len(suffix)]
            if len(stem) < r2:
                return word
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return word
            return stem
    return word


def _step_5(word: str, r1: int, r2: int) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        if len(stem) >= r2 or (len(stem) >= r1 and not _short_syllable_at_end(stem)):
            return stem
    elif word.endswith("ll") and len(word) - 1 >= r2:
        return word[:-1]
    return word


def stem(word: str) -> str:
    """The Porter2 stem of a lower-case English ``word``."""
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    if len(word) < 3:
        return word
    if word.startswith("'"):
        word = word[1:]
    letters = list(word)
    for i, letter in enumerate(letters):
        if letter == "y" and (i == 0 or letters[i - 1] in _VOWELS):
            letters[i] = "Y"
    word = "".join(letters)
    r1, r2 = _regions(word)
    for suffix in ("'s'", "'s", "'"):
        if word.endswith(suffix):
            word = word[:-len(suffix)]
            break
    word = _step_1a(word)
    if word in _AFTER_1A_INVARIANTS:
        return word
    word = _step_1b(word, r1)
    word = _step_1c(word)
    word = _step_2(word, r1)
    word = _step_3(word, r1, r2)
    word = _step_4(word, r2)
    word = _step_5(word, r1, r2)
    return word.replace("Y", "y")
