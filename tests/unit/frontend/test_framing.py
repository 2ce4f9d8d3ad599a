"""RFC 9112 framing: the request-head parser refuses what a proxy in front could frame
differently (the smuggling vectors), on the wire of a real loopback server too."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from pyctrl.frontend.http import RequestHead, body_length, parse_head, take_head
from tests.unit.frontend.helpers import ask

REFUSED = {
    "two differing Content-Length": b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\n"
                                    b"Content-Length: 5",
    "space before the colon": b"POST /echo HTTP/1.1\r\nContent-Length : 3",
    "tab before the colon": b"POST /echo HTTP/1.1\r\nContent-Length\t: 3",
    "obs-fold": b"GET /ok HTTP/1.1\r\nX-A: a\r\n b",
    "obs-fold with a colon": b"GET /ok HTTP/1.1\r\nX-A: a\r\n Content-Length: 3",
    "plus sign": b"POST /echo HTTP/1.1\r\nContent-Length: +3",
    "underscore": b"POST /echo HTTP/1.1\r\nContent-Length: 1_0",
    "minus sign": b"POST /echo HTTP/1.1\r\nContent-Length: -1",
    "hex": b"POST /echo HTTP/1.1\r\nContent-Length: 0x3",
    "empty length": b"POST /echo HTTP/1.1\r\nContent-Length: ",
    "list of lengths": b"POST /echo HTTP/1.1\r\nContent-Length: 3, 3",
    "superscript digit": b"POST /echo HTTP/1.1\r\nContent-Length: \xb2",
    "empty method": b" /ok HTTP/1.1",
    "method not a token": b"G(T /ok HTTP/1.1",
    "two spaces": b"GET  /ok HTTP/1.1",
    "bad version": b"GET /ok HTTP/1.10",
    "bare LF in a value": b"GET /ok HTTP/1.1\r\nX-A: a\nContent-Length: 3",
    "NUL in a value": b"GET /ok HTTP/1.1\r\nX-A: a\x00b",
    "empty field name": b"GET /ok HTTP/1.1\r\n: a",
    "control in the target": b"GET /o\x01k HTTP/1.1",
}


@pytest.mark.parametrize("head", REFUSED.values(), ids=REFUSED.keys())
def test_parse_head_refuses_with_400(head: bytes) -> None:
    reply = parse_head(head)
    assert not isinstance(reply, RequestHead), head
    assert reply[0] == 400


@pytest.mark.parametrize(("value", "length"), [("3", 3), (" 3", 3), ("3 ", 3), ("\t3\t", 3),
                                               ("007", 7)])
def test_whitespace_around_a_length_is_not_part_of_it(value: str, length: int) -> None:
    head = parse_head(f"POST /echo HTTP/1.1\r\nContent-Length:{value}".encode())
    assert isinstance(head, RequestHead)
    assert body_length(head) == length


def test_identical_repeated_lengths_are_one() -> None:
    head = parse_head(b"POST /e HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 3")
    assert isinstance(head, RequestHead) and body_length(head) == 3


def test_a_length_past_any_body_limit_is_413_not_a_crash() -> None:
    head = parse_head(b"POST /e HTTP/1.1\r\nContent-Length: " + b"9" * 5000)
    assert isinstance(head, RequestHead)
    assert body_length(head) == (413, b"request body too large", "text/plain; charset=utf-8")


@pytest.mark.parametrize("head", [REFUSED[k] for k in (
    "two differing Content-Length", "space before the colon", "obs-fold", "plus sign",
    "underscore", "empty method")], ids=str)
def test_the_server_answers_400_and_never_reaches_a_handler(serve: Any, head: bytes) -> None:
    server = serve()
    with socket.create_connection(server.address, timeout=5) as sock:
        reader = sock.makefile("rb")
        answer, _ = ask(sock, reader, head + b"\r\n\r\nabcde")
    assert answer.startswith(b"HTTP/1.1 400 "), answer


def test_take_head_takes_a_complete_head_out_of_the_buffer() -> None:
    buf = bytearray(b"GET /ok HTTP/1.1\r\nX-A: a\r\n")
    assert take_head(buf, 0, 64) is None and len(buf) == 26  # incomplete: left alone
    buf += b"\r\nNEXT"
    head = take_head(buf, 23, 64)
    assert isinstance(head, RequestHead) and head.path == "/ok" and buf == b"NEXT"
    big = bytearray(b"GET /ok HTTP/1.1\r\nX-A: " + b"a" * 64)
    assert take_head(big, 0, 64) == take_head(big + b"\r\n\r\n", 0, 64)
    assert take_head(big, 0, 64)[0] == 431  # type: ignore[index]
    bad = bytearray(b"G(T /ok HTTP/1.1\r\n\r\nNEXT")
    assert take_head(bad, 0, 64)[0] == 400 and bad == b"NEXT"  # type: ignore[index]
