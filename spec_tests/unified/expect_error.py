"""expectedError: assertions on the exception an operation raised.

isError, isClientError (not derived from a server reply), isTimeoutError (timeoutMS),
errorContains (case-insensitive; a bulk write error's individual messages count),
errorCode / errorCodeName (the server's, including a bulk write's write errors and write
concern error), errorLabelsContain / errorLabelsOmit, errorResponse (the server reply as a
root-level document), expectResult (the partial result a bulk write error carries: a
BulkWriteError's details, or ``partial_result`` on any error out of a bulk write),
writeErrors / writeConcernErrors (client bulk write).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from asyncmongo.errors import (
    BSONError,
    BulkWriteError,
    ClientBulkWriteException,
    MongoError,
    NotPrimaryError,
    OperationFailure,
)
from spec_tests.unified.matcher import MatchContext, MatchError, match
from spec_tests.unified.results import bulk_write_result_document, result_document

__all__ = ["check_error", "is_client_error", "server_reply"]

#: Exceptions that mean the runner itself broke, never "the driver raised an error".
_RUNNER_BUGS = (AttributeError, NameError, AssertionError, KeyError, IndexError,
                UnboundLocalError, NotImplementedError)


def server_reply(exc: BaseException) -> Mapping[str, Any] | None:
    """The server reply an error was built from: an OperationFailure's details, or the
    reply a NotPrimaryError (a ConnectionFailure, as in PyMongo) keeps in ``errors``."""
    if isinstance(exc, OperationFailure):
        return exc.details
    if isinstance(exc, NotPrimaryError) and isinstance(exc.errors, Mapping):
        return exc.errors
    return None


def is_client_error(exc: BaseException) -> bool:
    """Not derived from a server response (validation errors, network errors, ...)."""
    if isinstance(exc, ClientBulkWriteException) and exc.error is not None:
        return is_client_error(exc.error)
    return not isinstance(exc, OperationFailure) and server_reply(exc) is None


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, MongoError):
        return exc.timeout
    return isinstance(exc, TimeoutError)


def _server_documents(exc: BaseException) -> Iterator[Mapping[str, Any]]:
    """The server documents an error carries: the reply, each write error, each WCE."""
    if isinstance(exc, ClientBulkWriteException):
        if exc.error is not None:
            yield from _server_documents(exc.error)
        for error in exc.write_errors.values():
            yield _as_doc(error)
        for error in exc.write_concern_errors:
            yield _as_doc(error)
        return
    details = server_reply(exc)
    if details is None:
        return
    if isinstance(exc, BulkWriteError):
        yield from details.get("writeErrors", ())
        yield from details.get("writeConcernErrors", ())
        return
    if isinstance(exc, OperationFailure):
        yield {**details, "code": exc.code, "codeName": exc.code_name or details.get("codeName")}
        return
    yield details


def _as_doc(error: Any) -> Mapping[str, Any]:
    """A client bulk write's error as the CRUD spec's WriteError / WriteConcernError model
    (code, message, details); the driver keeps the server's document (errmsg, errInfo), as
    PyMongo does, so the spec's names are added beside the server's."""
    if isinstance(error, Mapping):
        model = dict(error)
        if "errmsg" in error:
            model.setdefault("message", error["errmsg"])
        if "errInfo" in error:
            model.setdefault("details", error["errInfo"])
        return model
    details = getattr(error, "details", None)
    if isinstance(details, Mapping):
        return details
    return {"code": getattr(error, "code", None), "errmsg": str(error)}


def check_error(expected: Mapping[str, Any], exc: BaseException,
                ctx: MatchContext | None) -> None:
    """Raise MatchError unless ``exc`` satisfies the expectedError object."""
    if isinstance(exc, _RUNNER_BUGS):
        raise exc
    for key, want in expected.items():
        _CHECKS[key](want, exc, ctx)


def _is_error(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    return None


def _client_error(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    if is_client_error(exc) != want:
        raise MatchError(f"expected {'a client' if want else 'a server'} error, got {exc!r}")


def _timeout_error(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    if _is_timeout(exc) != want:
        raise MatchError(f"expected {'a' if want else 'no'} timeout error, got {exc!r}")


def _contains(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    texts = [str(exc)] + [str(d.get("errmsg", "")) for d in _server_documents(exc)]
    if not any(want.lower() in text.lower() for text in texts):
        raise MatchError(f"error message does not contain {want!r}: {texts!r}")


def _code(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    codes = [d.get("code") for d in _server_documents(exc)]
    if want not in codes:
        raise MatchError(f"expected error code {want}, got {codes} ({exc!r})")


def _code_name(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    names = [str(d.get("codeName", "")).lower() for d in _server_documents(exc)]
    if want.lower() not in names:
        raise MatchError(f"expected codeName {want}, got {names} ({exc!r})")


def _labels(exc: BaseException) -> frozenset[str]:
    return exc.error_labels if isinstance(exc, MongoError) else frozenset()


def _labels_contain(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    missing = [label for label in want if label not in _labels(exc)]
    if missing:
        raise MatchError(f"error lacks labels {missing}: has {sorted(_labels(exc))} ({exc!r})")


def _labels_omit(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    present = [label for label in want if label in _labels(exc)]
    if present:
        raise MatchError(f"error has labels {present} it should not ({exc!r})")


def _error_response(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    details = server_reply(exc)
    if details is None:
        raise MatchError(f"expected a server response in the error, got {exc!r}")
    match(want, details, ctx, root=True, path="errorResponse")


def _expect_result(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    if isinstance(exc, BulkWriteError):
        actual: Any = bulk_write_result_document(exc.details or {})
    elif isinstance(exc, MongoError | BSONError) and exc.partial_result is not None:
        # a collection bulk write's partial BulkWriteResult on any other error (issue #10)
        # or a client bulk write's on ClientBulkWriteException
        actual = result_document(exc.partial_result)
    elif isinstance(exc, ClientBulkWriteException) and _may_be_unset(want):
        return  # no write succeeded: the partial result is unset, as the test allows
    else:
        raise MatchError(f"expected a partial result in the error, got {exc!r}")
    match(want, actual, ctx, root=True, path="expectError.expectResult")


def _may_be_unset(want: Any) -> bool:
    """``{$$unsetOrMatches: ...}``: an absent value satisfies the expectation."""
    return isinstance(want, Mapping) and set(want) == {"$$unsetOrMatches"}


def _write_errors(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    if not isinstance(exc, ClientBulkWriteException):
        raise MatchError(f"expected a client bulk write error, got {exc!r}")
    got = {int(k): _as_doc(v) for k, v in exc.write_errors.items()}
    if sorted(got) != sorted(int(k) for k in want):
        raise MatchError(f"expected write errors at {sorted(want)}, got {sorted(got)}")
    for index, error in want.items():
        match(error, got[int(index)], ctx, root=True, path=f"writeErrors.{index}")


def _write_concern_errors(want: Any, exc: BaseException, ctx: MatchContext | None) -> None:
    if not isinstance(exc, ClientBulkWriteException):
        raise MatchError(f"expected a client bulk write error, got {exc!r}")
    got = [_as_doc(e) for e in exc.write_concern_errors]
    if len(got) != len(want):
        raise MatchError(f"expected {len(want)} write concern errors, got {got}")
    for index, (error, actual) in enumerate(zip(want, got, strict=True)):
        match(error, actual, ctx, root=True, path=f"writeConcernErrors[{index}]")


_CHECKS = {
    "isError": _is_error,
    "isClientError": _client_error,
    "isTimeoutError": _timeout_error,
    "errorContains": _contains,
    "errorCode": _code,
    "errorCodeName": _code_name,
    "errorLabelsContain": _labels_contain,
    "errorLabelsOmit": _labels_omit,
    "errorResponse": _error_response,
    "expectResult": _expect_result,
    "writeErrors": _write_errors,
    "writeConcernErrors": _write_concern_errors,
}
