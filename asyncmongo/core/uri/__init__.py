"""Connection strings to frozen ClientOptions (pure: SRV answers come in as data).

``parse(uri, **kwargs)`` validates a ``mongodb://`` or ``mongodb+srv://`` connection string;
``apply_srv_records`` completes a ``mongodb+srv://`` one with its DNS answers.
"""

from asyncmongo.core.uri.client_options import ClientOptions, ClientPoolOptions
from asyncmongo.core.uri.parse import parse, parse_lenient, parse_uri_options
from asyncmongo.core.uri.srv import (
    SrvRecord,
    apply_srv_records,
    choose_hosts,
    is_valid_target,
    parse_txt_records,
    polled_hosts,
    srv_query_name,
)

__all__ = [
    "ClientOptions",
    "ClientPoolOptions",
    "SrvRecord",
    "apply_srv_records",
    "choose_hosts",
    "is_valid_target",
    "parse",
    "parse_lenient",
    "parse_txt_records",
    "parse_uri_options",
    "polled_hosts",
    "srv_query_name",
]
