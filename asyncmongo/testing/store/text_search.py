"""``$text`` queries over a collection's text index, and their ``textScore``.

What matches is mongod's: a document matches when one of its indexed strings holds any
search term, holds every quoted phrase, and holds no negated (``-word``) term; a search of
only negated terms matches nothing. Words are runs of letters and digits, compared
lower-cased and without diacritics (unless ``$caseSensitive`` / ``$diacriticSensitive``).

Languages are mongod's: in English (the default) stop words are dropped and words are
stemmed with the Snowball English stemmer (``snowball_english.py``), so "running", "runs"
and "run" are one term; in "none" words are kept as they are. A document is indexed in the
language named by its ``language_override`` field ("language" unless the index says
otherwise), else the index's ``default_language``; the search terms in ``$language``, else
the index's default. mongod's other languages (french, german, ...) are refused by name
rather than searched unstemmed, and a language mongod does not know fails as mongod does.
The score is mongod's formula: per field and term, ``weight * freq * (0.5 * count / tokens +
0.5)``, where each repeat of a term adds half as much as the one before.

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
from asyncmongo.testing.store.snowball_english import STOP_WORDS, stem
from asyncmongo.testing.store.text_index import MONGOD_LANGUAGES

Document = dict[str, Any]
_WORD = re.compile(r"[^\W_]+")
_SEARCH_OPTIONS = frozenset({"$search", "$language", "$caseSensitive", "$diacriticSensitive"})
# The languages the simulator tokenizes as mongod does.
IMPLEMENTED_LANGUAGES = frozenset({"english", "none"})


def language_named(name: Any, *, override: bool = False) -> str:
    """mongod's name for the text search language ``name`` (a name or a code, any case).

    A language mongod does not know fails as mongod fails it (BadValue 2 for an index's
    ``default_language`` or a ``$language``; 17262 for a document's ``language_override``
    field); one of mongod's languages the simulator does not stem is refused by name rather
    than searched unstemmed."""
    if not isinstance(name, str):
        raise bad_value("$language needs a String")
    language = MONGOD_LANGUAGES.get(name.lower())
    if language is None:
        if override:
            raise StoreError(17262, f"language override unsupported: {name}")
        raise bad_value(f'unsupported language: "{name}" for text index version 3')
    if language not in IMPLEMENTED_LANGUAGES:
        raise StoreError(17262 if override else 2,
                         f'text search in language "{name}" is not supported by '
                         f'asyncmongo.testing (it stems only "english"; "none" turns '
                         f'stemming off); mongod would stem {language} words')
    return language


@dataclass(frozen=True, slots=True)
class Analyzer:
    """How one language turns text into terms: tokens, stop words dropped, stems."""

    language: str
    case_sensitive: bool
    diacritic_sensitive: bool

    def terms(self, text: str) -> list[str]:
        """The index (or search) terms of ``text``, in order, repeats kept."""
        tokens = [self.normal(w) for w in _WORD.findall(text)]
        if self.language != "english":
            return tokens
        return [stem(t) for t in tokens if t.lower() not in STOP_WORDS]

    def normal(self, text: str) -> str:
        """``text`` without diacritics and lower-cased, unless the search is sensitive."""
        if not self.diacritic_sensitive:
            text = "".join(c for c in unicodedata.normalize("NFKD", text)
                           if not unicodedata.combining(c))
        return text if self.case_sensitive else text.lower()


@dataclass(frozen=True, slots=True)
class TextSearch:
    """A parsed ``$text`` query against one text index."""

    terms: frozenset[str]
    negated: frozenset[str]
    phrases: tuple[str, ...]
    weights: Mapping[str, int]
    analyzer: Analyzer
    default_language: str
    language_override: str

    def score(self, document: Mapping[str, Any]) -> float:
        """The document's textScore; 0 when it does not match."""
        analyzer = self.document_analyzer(document)
        strings = [(text, weight) for path, weight in self.weights.items()
                   for text in _strings(document, path)]
        words = [analyzer.terms(text) for text, _ in strings]
        found = set().union(*words) if words else set()
        if not self.terms & found or self.negated & found:
            return 0.0
        if not all(any(self._has_phrase(text, p) for text, _ in strings) for p in self.phrases):
            return 0.0
        return sum(_field_score(tokens, self.terms, weight)
                   for tokens, (_, weight) in zip(words, strings, strict=True))

    def document_analyzer(self, document: Mapping[str, Any]) -> Analyzer:
        """The analyzer of ``document``'s language: its ``language_override`` field when it
        holds a string, else the index's default language."""
        named = document.get(self.language_override)
        language = (language_named(named, override=True) if isinstance(named, str)
                    else self.default_language)
        if language == self.analyzer.language:
            return self.analyzer
        return Analyzer(language, self.analyzer.case_sensitive,
                        self.analyzer.diacritic_sensitive)

    def _has_phrase(self, text: str, phrase: str) -> bool:
        return self.analyzer.normal(phrase) in self.analyzer.normal(text)


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
    default_language = language_named(index_spec.get("default_language", "english"))
    language = (language_named(argument["$language"]) if "$language" in argument
                else default_language)
    override = index_spec.get("language_override", "language")
    analyzer = Analyzer(language, _flag(argument, "$caseSensitive"),
                        _flag(argument, "$diacriticSensitive"))
    phrases = tuple(re.findall(r'"([^"]*)"', search))
    rest = re.sub(r'"[^"]*"', " ", search)
    negated = {w for part in rest.split() if part.startswith("-")
               for w in analyzer.terms(part[1:])}
    terms = {w for part in rest.split() if not part.startswith("-")
             for w in analyzer.terms(part)}
    terms.update(w for phrase in phrases for w in analyzer.terms(phrase))
    return TextSearch(frozenset(terms), frozenset(negated), phrases,
                      dict(index_spec.get("weights", {})), analyzer, default_language,
                      override if isinstance(override, str) else "language")


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
