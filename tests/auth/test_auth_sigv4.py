"""SigV4 against AWS's published Signature Version 4 test suite (aws-sig-v4-test-suite:
credentials AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, service "service") and the
signing-key example of AWS's documentation, plus a differential check against botocore."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from asyncmongo.core.auth.sigv4 import (
    AwsCredentials,
    amz_date,
    canonical_path,
    canonical_request,
    sign,
    signing_key,
    string_to_sign,
)

CREDENTIALS = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
NOW = dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC)
SUITE = {"host": "example.amazonaws.com", "region": "us-east-1", "service": "service", "now": NOW}
PREFIX = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "


def test_signing_key_from_the_aws_documentation() -> None:
    key = signing_key(CREDENTIALS.secret_access_key, "20120215", "us-east-1", "iam")
    assert key.hex() == "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"


def test_get_vanilla_steps() -> None:
    request, signed = canonical_request(
        "GET", "/", "", [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z")],
        b"",
    )
    assert request == (
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert signed == "host;x-amz-date"
    assert string_to_sign(
        "20150830T123600Z", "20150830/us-east-1/service/aws4_request", request
    ) == (
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
    )


@pytest.mark.parametrize(
    ("name", "request_args", "signed", "signature"),
    [
        ("get-vanilla", {"method": "GET"}, "host;x-amz-date",
         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ("post-vanilla", {"method": "POST"}, "host;x-amz-date",
         "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
        ("get-vanilla-query-order-key-case",
         {"method": "GET", "query": "Param2=value2&Param1=value1"}, "host;x-amz-date",
         "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        ("get-header-value-trim",
         {"method": "GET", "headers": [("My-Header1", " value1"), ("My-Header2", ' "a   b   c"')]},
         "host;my-header1;my-header2;x-amz-date",
         "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
        ("post-x-www-form-urlencoded",
         {"method": "POST", "headers": {"Content-Type": "application/x-www-form-urlencoded"},
          "body": b"Param1=value1"},
         "content-type;host;x-amz-date",
         "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
    ],
)
def test_aws_sigv4_test_suite(
    name: str, request_args: dict[str, Any], signed: str, signature: str
) -> None:
    result = sign(CREDENTIALS, **request_args, **SUITE)
    assert result.authorization == f"{PREFIX}SignedHeaders={signed}, Signature={signature}"
    assert result.amz_date == "20150830T123600Z"


@pytest.mark.parametrize(
    ("path", "expected"),
    [("", "/"), ("/", "/"), ("/example/..", "/"), ("/./", "/"),
     ("/example space/", "/example%20space/"), ("//example//", "/example/"),
     ("/a/b/../c", "/a/c"), ("/-._~", "/-._~")],
)
def test_canonical_path(path: str, expected: str) -> None:
    assert canonical_path(path) == expected


def test_amz_date_is_utc() -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert amz_date(dt.datetime(2015, 8, 30, 14, 36, tzinfo=plus_two)) == "20150830T123600Z"


def test_the_secret_and_token_are_not_shown() -> None:
    shown = repr(AwsCredentials("AKID", "secret-key", "session-token"))
    assert "AKID" in shown and "secret-key" not in shown and "session-token" not in shown


def test_expiry() -> None:
    later = NOW + dt.timedelta(minutes=10)
    temporary = AwsCredentials("AKID", "s", "t", expiration=later)
    assert not temporary.expires_within(NOW, 5 * 60)
    assert temporary.expires_within(NOW, 15 * 60)
    assert not CREDENTIALS.expires_within(NOW, 10**9)


@pytest.mark.parametrize("token", [None, "session-token"])
@pytest.mark.parametrize(
    ("method", "path", "query", "headers", "body"),
    [
        ("POST", "/", "", {"Content-Type": "application/x-www-form-urlencoded",
                           "Content-Length": "43", "X-MongoDB-Server-Nonce": "bm9uY2U=",
                           "X-MongoDB-GS2-CB-Flag": "n"},
         b"Action=GetCallerIdentity&Version=2011-06-15"),
        ("GET", "/a b/c", "z=1&a=%2F&a=0&empty=", {"X-Spaced": "  x   y "}, b""),
    ],
)
def test_agrees_with_botocore(
    monkeypatch: pytest.MonkeyPatch, token: str | None, method: str, path: str, query: str,
    headers: dict[str, str], body: bytes,
) -> None:
    auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    monkeypatch.setattr(auth, "get_current_datetime", lambda: NOW.replace(tzinfo=None))
    host = "sts.us-west-2.amazonaws.com"
    url = f"https://{host}{path}" + (f"?{query}" if query else "")
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    credentials = AwsCredentials("AKIDEXAMPLE", CREDENTIALS.secret_access_key, token)
    auth.SigV4Auth(
        Credentials("AKIDEXAMPLE", CREDENTIALS.secret_access_key, token), "sts", "us-west-2"
    ).add_auth(request)
    ours = sign(
        credentials, method=method, host=host, path=path, query=query, headers=headers,
        body=body, region="us-west-2", service="sts", now=NOW,
    )
    assert ours.authorization == request.headers["Authorization"]
