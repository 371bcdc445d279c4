"""``$text`` queries over a collection's text index, and their ``textScore``.

What matches is mongod's: a document matches when one of its indexed strings holds any
search term, holds every quoted phrase, and holds no negated (``-word``) term; a search of
only negated terms matches nothing. Words are runs of letters and digits, compared
lower-cased and without diacritics (unless ``$caseSensitive`` / ``$diacriticSensitive``);
English stop words are dropped when the language is English. Unlike mongod, words are not
stemmed ("blueberries" does not match "blueberry"), so results differ only for searches that
rely on stemming. The score is mongod's formula: per field and term, ``weight * freq *
(0.5 * count / tokens + 0.5)``, where each repeat of a term adds half as much as the one
before.

Scores travel with their documents as metadata (``metadata.py``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.matcher import compile_filter
from asyncmongo.testing.store.metadata import TEXT_SCORE
from asyncmongo.testing.store.paths import MISSING, collect, split_path

Document = dict[str, Any]
_WORD = re.compile(r"[^\W_]+")
_SEARCH_OPTIONS = frozenset({"$search", "$language", "$caseSensitive", "$diacriticSensitive"})
_ENGLISH = frozenset({"english", "en"})
_STOP_WORDS = frozenset("""a about above after again against all am an and any are as at be
because been before being below between both but by can did do does doing don down during
each few for from further had has have having he her here hers herself him himself his how i
if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own s same she should so some such t than that the their
theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with you your yours yourself
yourselves""".split())


@dataclass(frozen=True, slots=True)
class TextSearch:
    """A parsed ``$text`` query against one text index."""

    terms: frozenset[str]
    negated: frozenset[str]
    phrases: tuple[str, ...]
    weights: Mapping[str, int]
    case_sensitive: bool
    diacritic_sensitive: bool
    english: bool

    def score(self, document: Mapping[str, Any]) -> float:
        """The document's textScore; 0 when it does not match."""
        strings = [(text, weight) for path, weight in self.weights.items()
                   for text in _strings(document, path)]
        words = [self._words(text) for text, _ in strings]
        found = set().union(*words) if words else set()
        if not self.terms & found or self.negated & found:
            return 0.0
        if not all(any(self._has_phrase(text, p) for text, _ in strings) for p in self.phrases):
            return 0.0
        return sum(_field_score(tokens, self.terms, weight)
                   for tokens, (_, weight) in zip(words, strings, strict=True))

    def _words(self, text: str) -> list[str]:
        tokens = [self._normal(w) for w in _WORD.findall(text)]
        if self.english:
            return [t for t in tokens if t.lower() not in _STOP_WORDS]
        return tokens

    def _normal(self, text: str) -> str:
        if not self.diacritic_sensitive:
            text = "".join(c for c in unicodedata.normalize("NFKD", text)
                           if not unicodedata.combining(c))
        return text if self.case_sensitive else text.lower()

    def _has_phrase(self, text: str, phrase: str) -> bool:
        return self._normal(phrase) in self._normal(text)


def _field_score(tokens: list[str], terms: frozenset[str], weight: int) -> float:
    frequency: dict[str, float] = {}
    counts: dict[str, int] = {}
    for token in tokens:
        if token in terms:
            counts[token] = counts.get(token, 0) + 1
            frequency[token] = frequency.get(token, 0.0) + 1 / 2 ** (counts[token] - 1)
    return sum(weight * frequency[t] * (0.5 * counts[t] / len(tokens) + 0.5) for t in counts)


def _strings(document: Mapping[str, Any], path: str) -> list[str]:
    if path == "$**":
        return list(_all_strings(document))
    found: list[str] = []
    for value in collect(document, split_path(path)):
        if value is MISSING:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                found.append(item)
    return found


def _all_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, Mapping) else value if isinstance(
        value, list) else []
    return [s for item in items for s in _all_strings(item)]


def text_argument(query: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The ``$text`` argument of a filter (at its top level or in its top-level ``$and``)."""
    if not query:
        return None
    if "$text" in query:
        argument = query["$text"]
        return argument if isinstance(argument, Mapping) else {}
    clauses = query.get("$and")
    for clause in clauses if isinstance(clauses, list) else []:
        found = text_argument(clause) if isinstance(clause, Mapping) else None
        if found is not None:
            return found
    return None


def compile_search(argument: Mapping[str, Any], index_spec: Mapping[str, Any]) -> TextSearch:
    """A :class:`TextSearch` for a ``$text`` argument over the text index listed as
    ``index_spec``."""
    unknown = [k for k in argument if k not in _SEARCH_OPTIONS]
    if unknown:
        raise bad_value(f"extra fields in $text: {unknown[0]}")
    search = argument.get("$search")
    if not isinstance(search, str):
        raise bad_value("$search needs a String")
    language = argument.get("$language", index_spec.get("default_language", "english"))
    if not isinstance(language, str):
        raise bad_value("$language needs a String")
    case_sensitive = _flag(argument, "$caseSensitive")
    diacritic_sensitive = _flag(argument, "$diacriticSensitive")
    probe = TextSearch(frozenset(), frozenset(), (), {}, case_sensitive, diacritic_sensitive,
                       language.lower() in _ENGLISH)
    phrases = tuple(re.findall(r'"([^"]*)"', search))
    rest = re.sub(r'"[^"]*"', " ", search)
    negated = {w for part in rest.split() if part.startswith("-")
               for w in probe._words(part[1:])}
    terms = {w for part in rest.split() if not part.startswith("-") for w in probe._words(part)}
    terms.update(w for phrase in phrases for w in probe._words(phrase))
    return TextSearch(frozenset(terms), frozenset(negated), phrases,
                      dict(index_spec.get("weights", {})), case_sensitive,
                      diacritic_sensitive, probe.english)


def _flag(argument: Mapping[str, Any], name: str) -> bool:
    value = argument.get(name, False)
    if not isinstance(value, bool):
        raise bad_value(f"{name} needs a boolean")
    return value


def search_for(collection: Any, query: Mapping[str, Any] | None) -> TextSearch | None:
    """The text search of ``query`` over ``collection``'s text index (None for a missing
    collection); None when the query has no ``$text``. Without a text index mongod fails
    with 27."""
    argument = text_argument(query)
    if argument is None:
        return None
    spec = next((s for s in index_specs(collection) if "_fts" in s.get("key", {})), None)
    if spec is None:
        raise StoreError(27, "text index required for $text query")
    return compile_search(argument, spec)


def matcher(search: TextSearch | None) -> Callable[[Mapping[str, Any]], bool] | None:
    """The ``$text`` predicate the filter compiler uses."""
    if search is None:
        return None
    return lambda document: search.score(document) > 0


def with_scores(documents: list[Document], search: TextSearch) -> list[Document]:
    """Copies of the (matching) documents carrying their score as metadata."""
    return [{**d, TEXT_SCORE: search.score(d)} for d in documents]


def compile_text_filter(collection: Any, query: Any,
                        variables: Mapping[str, Any] | None = None
                        ) -> tuple[Callable[[Mapping[str, Any]], bool], TextSearch | None]:
    """The predicate of a find/count/distinct/update/delete filter over ``collection`` (None
    when missing), and its text search (None without ``$text``)."""
    search = search_for(collection, query) if isinstance(query, Mapping) else None
    return compile_filter(query, variables, matcher(search)), search


def index_specs(collection: Any) -> list[Mapping[str, Any]]:
    """The listed specs of a collection's indexes (none for a missing collection)."""
    if collection is None:
        return []
    return [index.spec for index in collection.indexes.values()]


def starts_with_search(pipeline: Any) -> bool:
    """True when ``pipeline`` opens with a ``$match`` holding ``$text``."""
    first = pipeline[0] if isinstance(pipeline, list) and pipeline else None
    argument = first.get("$match") if isinstance(first, Mapping) else None
    return isinstance(argument, Mapping) and text_argument(argument) is not None
