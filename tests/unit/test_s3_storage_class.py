"""The s3_storage_class filter: its table, its configuration errors, and what it does before
s3api (names to classes, classes back to names) with a stand-in for s3api below it."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree
from paste.deploy import loadfilter
from swift.common.swob import Request, Response

from swift_dss.s3_storage_class import (
    ENV_EXCHANGE,
    S3StorageClassMiddleware,
    StorageClassConfigError,
    StorageClassTable,
    filter_factory,
)

CONF = {"storage_class_STANDARD_IA": "30", "storage_class_GLACIER": "31"}
SIGV4 = "AWS4-HMAC-SHA256 Credential=test:tester/20260101/us-east-1/s3/aws4_request, ..."
NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def test_table_maps_both_ways() -> None:
    table = StorageClassTable.from_conf({**CONF, "workers": "2", "bind_port": "8080"})
    assert dict(table.classes) == {"STANDARD_IA": 30, "GLACIER": 31}
    assert table.class_of("GLACIER") == 31
    assert table.class_of("glacier") is None  # S3 names are case-sensitive
    assert table.class_of("STANDARD") is None
    assert table.reported(31) == "GLACIER"
    assert table.reported(27) is None
    assert table.reported(0) is None
    assert table.reported(None) is None


def test_standard_may_be_given_a_class_and_is_never_reported() -> None:
    table = StorageClassTable.from_conf({"storage_class_STANDARD": "12"})
    assert table.class_of("STANDARD") == 12
    assert table.reported(12) is None


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"storage_class_standard_ia": "30"}, "in capitals"),
        ({"storage_class_": "30"}, "in capitals"),
        ({"storage_class_GLACIER": "cold"}, "must be a number"),
        ({"storage_class_GLACIER": "0"}, "1-255"),
        ({"storage_class_GLACIER": "256"}, "1-255"),
        ({"storage_class_GLACIER": "31", "storage_class_DEEP_ARCHIVE": "31"}, "already"),
        ({**CONF, "listing_concurrency": "0"}, "listing_concurrency"),
        ({**CONF, "listing_concurrency": "many"}, "listing_concurrency"),
    ],
)
def test_bad_config_refused_at_start_up(conf: dict[str, str], message: str) -> None:
    with pytest.raises(StorageClassConfigError, match=message):
        filter_factory({}, **conf)


def test_loaded_from_ini_keeps_the_case_of_names(tmp_path: Path) -> None:
    conf = tmp_path / "proxy-server.conf"
    conf.write_text(
        "[filter:s3_storage_class]\nuse = egg:swift_dss#s3_storage_class\n"
        "storage_class_STANDARD_IA = 30\nstorage_class_GLACIER = 31\n"
    )
    make = loadfilter(f"config:{conf}", name="s3_storage_class")
    mw = make(lambda env, start_response: [])
    assert dict(mw.table.classes) == {"STANDARD_IA": 30, "GLACIER": 31}
    conf.write_text(
        "[filter:s3_storage_class]\nuse = egg:swift_dss#s3_storage_class\n"
        "storage_class_GLACIER = 300\n"
    )
    with pytest.raises(StorageClassConfigError, match="storage_class_GLACIER = 300"):
        loadfilter(f"config:{conf}", name="s3_storage_class")


class _StandIn:
    """Plays s3api and everything below it: records the request, answers RESPONSE."""

    def __init__(self, response: Response | None = None, listed: dict[str, int] | None = None):
        self.response = response or Response(status=200)
        self.listed = listed or {}
        self.env: dict | None = None

    def __call__(self, env: dict, start_response: object):
        self.env = dict(env)
        exchange = env.get(ENV_EXCHANGE)
        if exchange is not None:
            exchange.listed.update(self.listed)  # what the instance after auth would find
        return self.response(env, start_response)


def _s3_request(method: str, path: str = "/bucket/key", **headers: str) -> Request:
    req = Request.blank(path, environ={"REQUEST_METHOD": method})
    req.headers["Authorization"] = SIGV4
    req.headers.update(headers)
    req.environ["headers_raw"] = tuple(req.headers.items())
    return req


def test_mapped_class_leaves_only_the_raw_headers() -> None:
    app = _StandIn(Response(status=200))
    mw = S3StorageClassMiddleware(app, CONF)
    req = _s3_request("PUT", **{"X-Amz-Storage-Class": "GLACIER"})
    raw = req.environ["headers_raw"]
    assert req.get_response(mw).status_int == 200
    assert "HTTP_X_AMZ_STORAGE_CLASS" not in app.env
    assert app.env["headers_raw"] == raw  # what s3api builds the string to sign from
    assert app.env[ENV_EXCHANGE].dss_class == 31


@pytest.mark.parametrize("storage_class", ["STANDARD", "DEEP_ARCHIVE", "glacier"])
def test_unmapped_class_reaches_s3api_untouched(storage_class: str) -> None:
    app = _StandIn()
    mw = S3StorageClassMiddleware(app, CONF)
    _s3_request("PUT", **{"X-Amz-Storage-Class": storage_class}).get_response(mw)
    assert app.env["HTTP_X_AMZ_STORAGE_CLASS"] == storage_class
    assert app.env[ENV_EXCHANGE].dss_class is None


def test_swift_requests_pass_untouched() -> None:
    app = _StandIn()
    mw = S3StorageClassMiddleware(app, CONF)
    req = Request.blank("/v1/AUTH_test/c/o", environ={"REQUEST_METHOD": "PUT"})
    req.headers["X-Amz-Storage-Class"] = "GLACIER"
    req.get_response(mw)
    assert app.env["HTTP_X_AMZ_STORAGE_CLASS"] == "GLACIER"
    assert ENV_EXCHANGE not in app.env


@pytest.mark.parametrize("header", ["X-DSS-Object-Class", "X-Amz-Meta-Dss-Object-Class"])
def test_disagreeing_dss_class_refused_as_s3_error(header: str) -> None:
    app = _StandIn()
    mw = S3StorageClassMiddleware(app, CONF)
    req = _s3_request("PUT", **{"X-Amz-Storage-Class": "GLACIER", header: "26"})
    resp = req.get_response(mw)
    assert resp.status_int == 400
    error = etree.fromstring(resp.body)
    assert error.findtext("Code") == "InvalidArgument"
    assert "send one" in error.findtext("Message")
    assert app.env is None
    # The same class in both forms is fine.
    req = _s3_request("PUT", **{"X-Amz-Storage-Class": "GLACIER", header: "31"})
    assert req.get_response(mw).status_int == 200


@pytest.mark.parametrize(("cls", "reported"), [("31", "GLACIER"), ("0", None), ("27", None)])
def test_head_reports_the_storage_class(cls: str, reported: str | None) -> None:
    app = _StandIn(Response(status=200, headers={"x-amz-meta-dss-object-class": cls}))
    resp = _s3_request("HEAD").get_response(S3StorageClassMiddleware(app, CONF))
    assert resp.headers.get("x-amz-storage-class") == reported


def _listing(*keys: str) -> bytes:
    root = etree.Element(f"{{{NS}}}ListBucketResult", nsmap={None: NS})
    etree.SubElement(root, f"{{{NS}}}Name").text = "bucket"
    for key in keys:
        contents = etree.SubElement(root, f"{{{NS}}}Contents")
        etree.SubElement(contents, f"{{{NS}}}Key").text = key
        etree.SubElement(contents, f"{{{NS}}}StorageClass").text = "STANDARD"
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


@pytest.mark.parametrize("url_keys", [False, True])
def test_listing_reports_storage_class_per_key(url_keys: bool) -> None:
    keys = ["a b+é", "glacier", "plain"]
    shown = [k.replace(" ", "%20").replace("+", "%2B").replace("é", "%C3%A9") for k in keys]
    body = _listing(*(shown if url_keys else keys))
    app = _StandIn(
        Response(status=200, body=body, content_type="application/xml"),
        listed={"a b+é": 30, "glacier": 31, "plain": 27},
    )
    path = "/bucket?list-type=2" + ("&encoding-type=url" if url_keys else "")
    resp = _s3_request("GET", path).get_response(S3StorageClassMiddleware(app, CONF))
    root = etree.fromstring(resp.body)
    got = [c.findtext(f"{{{NS}}}StorageClass") for c in root.iter(f"{{{NS}}}Contents")]
    assert got == ["STANDARD_IA", "GLACIER", "STANDARD"]
    assert resp.content_length == len(resp.body)


def test_other_gets_are_not_listings() -> None:
    app = _StandIn(listed={"k": 31})
    mw = S3StorageClassMiddleware(app, CONF)
    for query in ("uploads", "uploadId=x", "versions", "acl"):
        _s3_request("GET", f"/bucket?{query}").get_response(mw)
        assert not app.env[ENV_EXCHANGE].listing, query
    _s3_request("GET", "/bucket?prefix=a&delimiter=/&max-keys=2").get_response(mw)
    assert app.env[ENV_EXCHANGE].listing


def test_listing_lookup_can_be_turned_off() -> None:
    app = _StandIn()
    mw = S3StorageClassMiddleware(app, {**CONF, "list_storage_classes": "false"})
    _s3_request("GET", "/bucket?list-type=2").get_response(mw)
    assert not app.env[ENV_EXCHANGE].listing
