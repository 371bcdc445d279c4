"""The pieces under MONGODB-AWS's credential sources, one by one: the sans-I/O HTTP/1.1
codec, the asyncio HTTP client's deadline, the request builders, the credential cache's
five-minute rule, what a custom provider may return, and the simulator's clock-skew check."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta

import pytest

from asyncmongo.core.auth.aws import AwsConversation
from asyncmongo.core.auth.aws_sources import (
    AwsCredentialCache,
    AwsEndpoints,
    SourcedCredentials,
    assume_role_with_web_identity_request,
    ecs_request,
    imds_credentials_request,
    imds_token_request,
    read_credentials_response,
)
from asyncmongo.core.auth.sigv4 import AwsCredentials
from asyncmongo.core.http import (
    HttpError,
    HttpRequest,
    HttpResponse,
    ResponseParser,
    Url,
    encode_request,
)
from asyncmongo.errors import ConfigurationError, NetworkTimeout, OperationFailure
from asyncmongo.runtime import http
from asyncmongo.runtime.aws_credentials import credentials_from_provider
from asyncmongo.testing.aws import SimulatedImds, temporary_credentials
from asyncmongo.testing.scram import SaslServer, UserDirectory

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)

# -- HTTP/1.1 --------------------------------------------------------------------------------


def test_url_parts_and_host_header() -> None:
    assert Url.parse("https://sts.amazonaws.com") == Url("https", "sts.amazonaws.com", 443, "/")
    url = Url.parse("http://127.0.0.1:8000/a?b=c")
    assert (url.port, url.target, url.host_header) == (8000, "/a?b=c", "127.0.0.1:8000")
    assert Url.parse("http://[::1]:80/").host_header == "[::1]"
    assert url.join("/latest/api/token").target == "/latest/api/token"
    for bad in ("ftp://host/", "http:///path", "http://host:port/"):
        with pytest.raises(HttpError):
            Url.parse(bad)


def test_request_bytes() -> None:
    request = HttpRequest("PUT", Url.parse("http://169.254.169.254/latest/api/token"),
                          {"X-aws-ec2-metadata-token-ttl-seconds": "30"})
    assert encode_request(request) == (
        b"PUT /latest/api/token HTTP/1.1\r\nHost: 169.254.169.254\r\n"
        b"X-aws-ec2-metadata-token-ttl-seconds: 30\r\nContent-Length: 0\r\n"
        b"Connection: close\r\n\r\n"
    )
    with pytest.raises(HttpError, match="line break"):
        encode_request(HttpRequest("GET", Url.parse("http://h/"), {"X": "a\r\nInjected: 1"}))


def parse(chunks: list[bytes], eof: bool = False) -> HttpResponse | None:
    parser = ResponseParser()
    for chunk in chunks:
        parser.feed(chunk)
    if eof:
        parser.feed_eof()
    return parser.next_response()


@pytest.mark.parametrize("split", [1, 7, 1000])
def test_responses_by_length_chunks_and_end_of_connection(split: int) -> None:
    def pieces(data: bytes) -> list[bytes]:
        return [data[i : i + split] for i in range(0, len(data), split)]

    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nX-A: 2\r\n\r\nhello"
    response = parse(pieces(sized))
    assert response == HttpResponse(200, "OK", {"content-length": "5", "x-a": "1, 2"}, b"hello")
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    assert parse(pieces(chunked)) == HttpResponse(
        200, "OK", {"transfer-encoding": "chunked"}, b"abcde"
    )
    until_close = b"HTTP/1.0 404 Not Found\r\n\r\nnothing"
    assert parse(pieces(until_close)) is None
    response = parse(pieces(until_close), eof=True)
    assert response is not None and (response.status, response.body) == (404, b"nothing")
    assert not response.ok


@pytest.mark.parametrize(
    "data",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_malformed_responses(data: bytes) -> None:
    with pytest.raises(HttpError):
        parse([data])


def test_a_response_cut_short_is_an_error() -> None:
    with pytest.raises(HttpError, match="closed in the middle of the body"):
        parse([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"], eof=True)
    with pytest.raises(HttpError, match="response head"):
        parse([b"HTTP/1.1 200"], eof=True)
    with pytest.raises(HttpError, match="larger than"):
        parse([b"x" * (1024 * 1024 + 1)])


async def test_the_client_gives_up_at_its_deadline() -> None:
    release = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        await reader.read(1000)
        await release.wait()  # never answers
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(NetworkTimeout, match="no complete answer"):
            await http.request(HttpRequest("GET", Url.parse(f"http://127.0.0.1:{port}/")),
                               deadline=started + 0.2)
        assert loop.time() - started < 1.5
    finally:
        release.set()
        server.close()
        await server.wait_closed()
        await asyncio.gather(*handlers)


async def test_a_cancelled_request_closes_its_connection() -> None:
    closed = asyncio.Event()
    arrived = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        arrived.set()
        await reader.read()  # until the client closes its end
        closed.set()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    deadline = asyncio.get_running_loop().time() + 30
    task = asyncio.create_task(
        http.request(HttpRequest("GET", Url.parse(f"http://127.0.0.1:{port}/")), deadline=deadline)
    )
    try:
        await asyncio.wait_for(arrived.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(closed.wait(), 5)
    finally:
        server.close()
        await server.wait_closed()


async def test_the_simulated_imds_wants_its_token() -> None:
    async with SimulatedImds(temporary_credentials()) as imds:
        deadline = asyncio.get_running_loop().time() + 5
        url = Url.parse(imds.url).join("/latest/meta-data/iam/security-credentials/")
        response = await http.request(HttpRequest("GET", url), deadline=deadline)
        assert response.status == 401
        bad_ttl = HttpRequest("PUT", Url.parse(imds.url).join("/latest/api/token"),
                              {"X-aws-ec2-metadata-token-ttl-seconds": "99999"})
        assert (await http.request(bad_ttl, deadline=deadline)).status == 400


# -- requests and answers ----------------------------------------------------------------------


def test_endpoints_from_the_environment() -> None:
    assert AwsEndpoints.from_environment({}) == AwsEndpoints(
        "https://sts.amazonaws.com", "http://169.254.170.2", "http://169.254.169.254", None
    )
    environ = {"AWS_ENDPOINT_URL": "https://a", "AWS_ENDPOINT_URL_STS": "https://sts.b",
               "ASYNCMONGO_AWS_ECS_ENDPOINT": "http://c", "AWS_CA_BUNDLE": "/ca.pem",
               "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://[fd00:ec2::254]"}
    assert AwsEndpoints.from_environment(environ) == AwsEndpoints(
        "https://sts.b", "http://c", "http://[fd00:ec2::254]", "/ca.pem"
    )
    assert AwsEndpoints.from_environment({"AWS_ENDPOINT_URL": "https://a"}).sts == "https://a"
    with pytest.raises(ConfigurationError, match="bad ECS endpoint"):
        ecs_request(AwsEndpoints(ecs="169.254.170.2"), "/v2/credentials/x")


def test_the_requests_of_each_source() -> None:
    endpoints = AwsEndpoints()
    request = assume_role_with_web_identity_request(
        endpoints, token="tok=en&", role_arn="arn:aws:iam::1:role/r", session_name="s"
    )
    assert (request.method, str(request.url)) == ("POST", "https://sts.amazonaws.com:443/")
    assert request.body == (
        b"Action=AssumeRoleWithWebIdentity&RoleSessionName=s&RoleArn=arn%3Aaws%3Aiam%3A%3A1"
        b"%3Arole%2Fr&WebIdentityToken=tok%3Den%26&Version=2011-06-15"
    )
    assert request.headers["Accept"] == "application/json"
    assert str(ecs_request(endpoints, "/v2/credentials/abc").url) == (
        "http://169.254.170.2:80/v2/credentials/abc"
    )
    token = imds_token_request(endpoints)
    assert (token.method, token.headers) == ("PUT", {"X-aws-ec2-metadata-token-ttl-seconds": "30"})
    role = imds_credentials_request(endpoints, "t", "my role")
    assert role.url.target == "/latest/meta-data/iam/security-credentials/my%20role"
    assert role.headers == {"X-aws-ec2-metadata-token": "t"}


def test_error_answers_name_the_source_and_the_aws_error() -> None:
    refused = HttpResponse(403, "Forbidden", {}, b'{"Error": {"Code": "AccessDenied", '
                           b'"Message": "no"}}')
    expected = "STS x answered HTTP 403 Forbidden: AccessDenied no"
    with pytest.raises(OperationFailure, match=expected):
        read_credentials_response(refused, "STS x")
    with pytest.raises(OperationFailure, match="ECS answered no JSON"):
        read_credentials_response(HttpResponse(200, "OK", {}, b"<xml/>"), "ECS")


# -- the cache --------------------------------------------------------------------------------


def test_the_cache_keeps_credentials_until_five_minutes_before_expiry() -> None:
    cache = AwsCredentialCache()
    assert cache.get(NOW) is None and repr(cache) == "<AwsCredentialCache empty>"
    entry = SourcedCredentials(
        AwsCredentials("ASIA1", "secret", "token", NOW + timedelta(minutes=10)), "EC2"
    )
    cache.put(entry)
    assert cache.get(NOW) is entry
    assert cache.get(NOW + timedelta(minutes=4, seconds=59)) is entry
    assert cache.get(NOW + timedelta(minutes=5, seconds=1)) is None
    assert "ASIA1 from EC2" in repr(cache) and "secret" not in repr(cache)
    cache.clear()
    assert cache.get(NOW) is None


def test_credentials_without_expiration_are_not_cached() -> None:
    cache = AwsCredentialCache()
    cache.put(SourcedCredentials(AwsCredentials("AKID", "secret"), "provider"))
    assert cache.get(NOW) is None


# -- what a custom provider may return ----------------------------------------------------


class PyMongoShaped:
    username = "AKIDP"
    password = "secret-p"
    token = None
    expiration = NOW


class RefreshableLike:
    """botocore's RefreshableCredentials: read a consistent snapshot, not the attributes."""

    access_key = "stale"

    def get_frozen_credentials(self) -> PyMongoShaped:
        return PyMongoShaped()


def test_provider_results() -> None:
    plain = AwsCredentials("AKID", "s")
    assert credentials_from_provider(plain, "p") is plain
    assert credentials_from_provider({"AccessKeyId": "A", "SecretAccessKey": "S"}, "p") == (
        AwsCredentials("A", "S")
    )
    assert credentials_from_provider(
        {"AccessKeyId": "A", "SecretAccessKey": "S", "Token": "T",
         "Expiration": "2030-01-01T12:00:00Z"}, "p"
    ) == AwsCredentials("A", "S", "T", NOW)
    assert credentials_from_provider(PyMongoShaped(), "p") == AwsCredentials(
        "AKIDP", "secret-p", None, NOW
    )
    assert credentials_from_provider(RefreshableLike(), "p").access_key_id == "AKIDP"
    for bad in (None, {"AccessKeyId": "A"}, "AKID:secret"):
        with pytest.raises(ConfigurationError, match="AWS_CREDENTIAL_PROVIDER f returned"):
            credentials_from_provider(bad, "AWS_CREDENTIAL_PROVIDER f")


# -- the simulator's clock ---------------------------------------------------------------------


@pytest.mark.parametrize("skew", [timedelta(minutes=-16), timedelta(minutes=16)])
def test_the_simulator_refuses_a_request_signed_at_another_time(skew: timedelta) -> None:
    users = UserDirectory()
    credentials = temporary_credentials()
    users.add_aws_user("arn:aws:iam::1:role/r", credentials)
    server = SaslServer(users)
    signed_at = datetime.now(UTC) + skew
    conversation = AwsConversation(credentials, secrets.token_bytes(32), signed_at)
    reply = server.handle("$external", conversation.first_command())
    assert reply["ok"] == 1.0
    reply = server.handle("$external", conversation.step(reply) or {})
    assert (reply["ok"], reply["code"]) == (0.0, 18)
    in_time = AwsConversation(credentials, secrets.token_bytes(32), datetime.now(UTC))
    reply = server.handle("$external", in_time.first_command())
    reply = server.handle("$external", in_time.step(reply) or {})
    assert reply["ok"] == 1.0 and reply["done"] is True
    assert [user.name for user in server.authenticated_users] == ["arn:aws:iam::1:role/r"]
