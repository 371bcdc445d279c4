"""The simulator's English Snowball (Porter2) stemmer, as mongod stems $text terms.

A fixed table of stems (the algorithm's own examples and its exceptional words) runs
everywhere; the ``snowballstemmer`` package, when installed, serves as an independent oracle
over several thousand words. It is a test oracle only, never a runtime dependency.
"""

from __future__ import annotations

import json
import random
import re
from importlib import metadata
from pathlib import Path

import pytest

from asyncmongo.testing.store.snowball_english import STOP_WORDS, stem

KNOWN_STEMS = {
    'running': 'run', 'runs': 'run', 'run': 'run', 'ran': 'ran', 'runner': 'runner',
    'blueberries': 'blueberri', 'blueberry': 'blueberri', 'caresses': 'caress',
    'ponies': 'poni', 'ties': 'tie', 'cats': 'cat', 'feed': 'feed', 'agreed': 'agre',
    'plastered': 'plaster', 'motoring': 'motor', 'sing': 'sing', 'conflated': 'conflat',
    'troubled': 'troubl', 'sized': 'size', 'hopping': 'hop', 'tanned': 'tan',
    'falling': 'fall', 'hissing': 'hiss', 'fizzed': 'fizz', 'failing': 'fail',
    'filing': 'file', 'happy': 'happi', 'sky': 'sky', 'skies': 'sky', 'dying': 'die',
    'lying': 'lie', 'news': 'news', 'idly': 'idl', 'gently': 'gentl', 'only': 'onli',
    'singly': 'singl', 'generously': 'generous', 'generate': 'generat',
    'communism': 'communism', 'arsenal': 'arsenal', 'relational': 'relat',
    'conditional': 'condit', 'rational': 'ration', 'valenci': 'valenc', 'hesitanci': 'hesit',
    'digitizer': 'digit', 'conformabli': 'conform', 'radicalli': 'radic',
    'differentli': 'differ', 'vileli': 'vile', 'analogousli': 'analog',
    'vietnamization': 'vietnam', 'predication': 'predic', 'operator': 'oper',
    'feudalism': 'feudal', 'decisiveness': 'decis', 'hopefulness': 'hope',
    'callousness': 'callous', 'formaliti': 'formal', 'sensitiviti': 'sensit',
    'sensibiliti': 'sensibl', 'triplicate': 'triplic', 'formative': 'format',
    'formalize': 'formal', 'electriciti': 'electr', 'electrical': 'electr', 'hopeful': 'hope',
    'goodness': 'good', 'revival': 'reviv', 'allowance': 'allow', 'inference': 'infer',
    'airliner': 'airlin', 'gyroscopic': 'gyroscop', 'adjustable': 'adjust',
    'defensible': 'defens', 'irritant': 'irrit', 'replacement': 'replac',
    'adjustment': 'adjust', 'dependent': 'depend', 'adoption': 'adopt', 'activate': 'activ',
    'angulariti': 'angular', 'homologous': 'homolog', 'effective': 'effect',
    'bowdlerize': 'bowdler', 'probate': 'probat', 'rate': 'rate', 'cease': 'ceas',
    'controll': 'control', 'roll': 'roll', 'consign': 'consign', 'consigned': 'consign',
    'consistency': 'consist', 'consolation': 'consol', 'consolingly': 'consol',
    'conspiracy': 'conspiraci', 'constable': 'constabl', 'knackeries': 'knackeri',
    'knightly': 'knight', 'knives': 'knive', 'kneeling': 'kneel', 'knitted': 'knit',
    'inning': 'inning', 'outings': 'outing', 'canning': 'canning', 'herring': 'herring',
    'proceed': 'proceed', 'exceeding': 'exceed', 'succeeded': 'succeed', 'youth': 'youth',
    'sayyid': 'sayyid', 'yelling': 'yell', 'cry': 'cri', 'cries': 'cri', 'dried': 'dri',
    "'tis": 'tis', "dog's": 'dog', "dogs'": 'dog', "hers'": 'her',
}

SPEC_DATA = Path(__file__).resolve().parents[2] / "spec_tests" / "data"
SUFFIXES = ("", "s", "es", "ies", "ied", "ing", "ingly", "ed", "edly", "eed", "eedly", "ly",
            "li", "ation", "ational", "ness", "ful", "ive", "iveness", "ogi", "bli", "abli",
            "alli", "ement", "ment", "ion", "e", "ll", "y", "'s", "'s'", "'", "sses", "us",
            "izer", "ization", "ative", "icate", "ical", "iciti", "ance", "ence", "able",
            "ible", "ism", "iti", "ous", "ize", "al", "er", "ic", "ant", "ent")


@pytest.mark.parametrize(("word", "expected"), sorted(KNOWN_STEMS.items()))
def test_known_stems(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_stop_words_are_mongods_english_list() -> None:
    assert {"the", "a", "and", "is", "yourselves", "cannot"} <= STOP_WORDS
    assert not {"run", "blueberry", "can", "will"} & STOP_WORDS
    assert len(STOP_WORDS) == 174


def _words() -> list[str]:
    """Words of the vendored spec files plus seeded words built from stems and suffixes."""
    words: set[str] = set()
    for path in sorted(SPEC_DATA.rglob("*.json"))[:600]:
        words.update(w.lower() for w in re.findall(r"[A-Za-z]+",
                                                   json.dumps(json.loads(path.read_text()))))
    chooser = random.Random(20261127)
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(4000):
        body = "".join(chooser.choice(letters) for _ in range(chooser.randint(1, 6)))
        prefix = chooser.choice(("", "", "", "gener", "commun", "arsen", "y", "'"))
        words.add(prefix + body + chooser.choice(SUFFIXES) + chooser.choice(SUFFIXES[:8]))
    return sorted(words)


def test_stems_agree_with_snowballstemmer() -> None:
    snowball = pytest.importorskip("snowballstemmer")
    if int(metadata.version("snowballstemmer").split(".")[0]) >= 3:
        pytest.skip("snowballstemmer 3 implements Snowball 3's revised English rules; mongod "
                    "(and this stemmer) use the classic rules of snowballstemmer 2.x")
    oracle = snowball.stemmer("english")
    words = _words()
    assert len(words) > 3000
    differing = [(w, stem(w), oracle.stemWord(w)) for w in words if stem(w) != oracle.stemWord(w)]
    assert differing == []
