"""What counts as a secret in logs, recordings and error messages, and how it is hidden, decided once.

Two rules: a secret's *name* (``is_secret_field``: ``password``, ``apiKey``, ``X-Session-Id``...)
hides the value given under it, and a secret's *shape* (``sowt_``, ``sowk_``, ``sowa_``: every
secret sowctl issues) hides it wherever it appears. ``mask_body`` applies both to a request or
response body of any shape (valid JSON, a form, multipart, JSON with a syntax error, any text, a
body cut short) and ``mask_text`` to any text (a log line, a value an error message repeats).
The access log (``server.access_log``), the HTTP server's log (``engine.logs``), the server's
own lines (``server.responses.log``), the test double's request log and recordings
(``testdouble``) and error messages (``errors.quoted``) all hide secrets with these functions.
No imports beyond the standard library: the engine uses it without loading the application.
"""

from __future__ import annotations

import codecs
import functools
import html
import json
import re
import unicodedata
from typing import Any
from urllib.parse import unquote, unquote_plus

MASK = "***"
# Field, header and query-parameter names that hold secrets (compared case-folded, with every
# character but letters and digits dropped: ``pass_word``, ``Pass-Word`` and ``PASSWORD`` are
# one name): the exact names, words that make any name containing them a secret's
# (``secretKey``, ``X-Private-Key``, ``Cookie2``), and endings (``x-auth``, ``signingKey``,
# ``db_pwd``).
SECRET_FIELDS = frozenset(
    {"key", "auth", "authorization", "pass", "pwd", "sig", "sid", "session", "otp", "pin", "xapikey"}
)
_SECRET_WORDS = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signature",
    "sessionid",
    "cookie",
    "bearer",
)
_SECRET_SUFFIXES = ("key", "auth", "pass", "pwd", "otp")  # userPass, db_pwd, totp
# Every secret sowctl issues starts with one of these: bearer tokens, API keys and the
# admin token of ``serve --admin``. A secret is known by its shape wherever it appears
# (a path, a query parameter's name or value, a free-text field).
TOKEN_PREFIX = "sowt_"
KEY_PREFIX = "sowk_"
ADMIN_TOKEN_PREFIX = "sowa_"
SECRET_PREFIXES = (TOKEN_PREFIX, KEY_PREFIX, ADMIN_TOKEN_PREFIX)
_SECRET_VALUE = re.compile("(?:" + "|".join(map(re.escape, SECRET_PREFIXES)) + r")[A-Za-z0-9_\-]+")
_SEPARATORS = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=4096)  # the same keys and headers come again and again
def is_secret_field(name: str) -> bool:
    if not name.isascii():  # fullwidth or composed letters spell the same name
        name = unicodedata.normalize("NFKC", name)
    key = _SEPARATORS.sub("", name.casefold())
    return key in SECRET_FIELDS or key.endswith(_SECRET_SUFFIXES) or any(w in key for w in _SECRET_WORDS)


# Headers that carry credentials: never stored anywhere (the request log keeps the others).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})


def is_secret_header(name: str) -> bool:
    return name.lower() in CREDENTIAL_HEADERS or is_secret_field(name)


def redact(text: str) -> str:
    """``text`` with every sowctl token or key in it cut to its prefix and ``***``."""
    return _SECRET_VALUE.sub(lambda match: match[0][:5] + MASK, text)


# --- any text: name/value pairs, multipart parts, XML elements ----------------------------

# A text holds no secret these rules find unless it has an escape, a tag or a sowctl prefix,
# or a separator and, once case-folded without separators, a piece of a secret's name:
# most strings (titles, timestamps, ids) are returned as they are after two searches.
_HINT = re.compile(r"[%\\<&]|sow[tka]_|://[^\s/@]*:")
# the password of a URL's user (postgresql://app:PASSWORD@host/db), or what may be its start
# when the text ends there (anything but a port number)
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][\w+.\-]*://[^\s/:@]*:)(?:[^\s/@]+(?=@)|(?!\d+\Z)[^\s/@]+\Z)")
_NAME_PIECES = tuple(sorted({*SECRET_FIELDS, *_SECRET_WORDS, *_SECRET_SUFFIXES}))
_ASCII_SEPARATORS = str.maketrans("", "", "".join(c for c in map(chr, range(128)) if not c.isalnum()))
_NAME_CHAR = r"""[^\s"'=:&;,{}\[\]<>()]"""
_SCAN = re.compile(
    # a multipart part's header (its name says whether its content is a secret)
    r"(?P<part>(?<![^\n])[ \t]*(?i:content-disposition)[ \t]*:[^\r\n]*)"
    # an XML element (<password>...</password>)
    r"|<(?P<tag>[A-Za-z_][\w:.\-]*)"
    # a name, quoted ("name", 'name', \"name\" inside a JSON string) or not, and a separator
    r"|(?:(?<!\\)(?P<bs>\\*)(?:\"(?P<dq>[^\"\r\n]*?)(?P=bs)\"|'(?P<sq>[^'\r\n]*?)(?P=bs)')"
    rf"|(?<!{_NAME_CHAR})(?P<bare>{_NAME_CHAR}++))"
    r"[ \t\r\n]*(?P<sep>=>|:=|[:=])[ \t\r\n]*"
)
_QUOTE = re.compile(r"(\\*)([\"'])")
# a number, true, false, null, or a value masked already (masking masked text changes nothing)
_LITERAL = re.compile(r"(?:-?\d[\w.+\-]*|true|false|null|\*\*\*)(?=[ \t]*(?:[,}\]\r\n&;]|$))")
_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_LINE_END = re.compile(r"[\r\n]")
_JSON_STRING_END = re.compile(r"[\r\n]|[\"'](?=\s*[,}\]])")
_TAG_REST = re.compile(r"[^<>]*>")
_TRIPLE_QUOTE = re.compile(r"\"\"\"|'''")
_YAML_BLOCK = re.compile(r"[|>][+-]?\d*[ \t]*(?:\r?\n(?:[ \t]+[^\r\n]*|[ \t]*(?=\r?\n)))*")
_BLANK_LINE = re.compile(r"\r?\n[ \t]*\r?\n")
_PART_NAME = re.compile(r'(?i)(?<![\w-])name\*?[ \t]*=[ \t]*(?:"((?:[^"\\\r\n]|\\.)*)"|([^;\s]*))')
_FIRST_BOUNDARY = re.compile(r"\s*--(\S+)\r?\n")
_FORM = re.compile(r"""[^\s&="'{}<>\\]+=[^\s&"'{}<>\\]*(?:&[^\s&"'{}<>\\]*)*""")
_ESCAPE = re.compile(r"(?<!\\)\\+(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))")
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
_SEPARATOR_IN_NAME = re.compile(r"[=:]|sow[tka]_")
_WORD_BEFORE = re.compile(r"(?<![\w-])([\w-]+)[ \t]+\Z")
# Text nested deeper than this (a form value holding a form holding a form...) is masked
# whole when it may hold a secret at all, rather than followed further.
_MAX_DEPTH = 4


def mask_text(text: str, boundary: str | None = None) -> str:
    """``text`` with every secret hidden: the value after a secret's name (``"password":
    "..."``, ``password=...``, ``Password: ...``, ``<password>...``, a multipart part named
    ``password``) and a URL's password (``https://user:***@host``) become ``***``, and
    every sowctl secret is cut to its prefix.

    A value runs to its closing quote or bracket, or to the end of the line, and to the end
    of the text when the text stops first (a body cut short): no part of a secret shows. Text
    that is still percent-encoded or has ``\\u`` escapes or HTML entities is judged decoded
    too (and shown decoded when that hides more). ``boundary``: a multipart body's boundary, when known.
    """
    return _mask(text, boundary, 0)


def _mask(text: str, boundary: str | None, depth: int) -> str:
    """``mask_text`` of a text found ``depth`` levels inside another (a form's value...)."""
    if not _may_hold_secret(text):
        return text
    if depth > _MAX_DEPTH:
        return MASK
    masked = _mask_plain(text, boundary, depth)
    decoded = _decoded(masked)
    if decoded != masked:
        again = _mask_plain(decoded, boundary, depth)
        if again != decoded:
            return again
    return masked


def _may_hold_secret(text: str) -> bool:
    if _HINT.search(text):
        return True
    if "=" not in text and ":" not in text:
        return False
    if text.isascii():  # str.translate and `in`: a megabyte in milliseconds
        folded = text.lower().translate(_ASCII_SEPARATORS)
    else:
        folded = _SEPARATORS.sub("", unicodedata.normalize("NFKC", text).casefold())
    return any(piece in folded for piece in _NAME_PIECES)


def _mask_plain(text: str, boundary: str | None, depth: int) -> str:
    if _FORM.fullmatch(text.strip()):
        return _mask_form(text, depth)
    text = _URL_PASSWORD.sub(lambda m: m[1] + MASK, text)
    return redact(_scan(text, boundary or _first_boundary(text), depth))


def _scan(text: str, boundary: str | None, depth: int) -> str:
    """The pairs, parts and elements of ``text`` whose name is a secret's, values masked."""
    jsonish = text.lstrip()[:1] in ("{", "[")
    blank_lines = _BlankLines(text)
    out: list[str] = []
    done = at = 0
    while (match := _SCAN.search(text, at)) is not None:
        at = match.end("tag") if match["tag"] is not None else match.end()
        if match["part"] is not None:
            span, replacement = _part_content(text, match, boundary, blank_lines), MASK
        elif match["tag"] is not None:
            span, replacement = _element_content(text, match), MASK
        else:
            group = "dq" if match["dq"] is not None else "sq" if match["sq"] is not None else "bare"
            name = match[group]
            if group != "bare" and _SEPARATOR_IN_NAME.search(name):  # a key "password=x"
                masked_name = _mask(name, None, depth + 1)
                if masked_name != name:
                    out += [text[done : match.start(group)], masked_name]
                    done = match.end(group)
            if group == "bare" and text[match.start() - 1 : match.start()] in (" ", "\t"):
                name = name if _is_secret_name(name) else _spaced_name(text, match) or name
            span, replacement = _value(text, match.end(), name, jsonish)
        if span is not None:
            out += [text[done : span[0]], replacement]
            done = at = span[1]
    out.append(text[done:])
    return "".join(out)


def _value(text: str, start: int, name: str, jsonish: bool) -> tuple[tuple[int, int] | None, str]:
    """(span, replacement) of the value at ``start`` when ``name`` is a secret's; (None, "")
    for another name, or no value."""
    if start >= len(text) or text[start] in ",;&}]" or not _is_secret_name(name):
        return None, ""
    triple = _TRIPLE_QUOTE.match(text, start)  # TOML, Python: """...""" and '''...'''
    if triple is not None:
        end = text.find(triple[0], triple.end())
        if end == -1:
            return (start, len(text)), triple[0] + MASK
        return (start, end + 3), triple[0] + MASK + triple[0]
    quote = _QUOTE.match(text, start)
    if quote is not None:
        quoted_end = _quoted_end(text, quote.end(), len(quote[1]), quote[2])
        if quoted_end is None:  # cut short inside the string: everything after the quote goes
            return (start, len(text)), quote[0] + MASK
        return (start, quoted_end), quote[0] + MASK + quote[0]
    if text[start] in "{[":
        return (start, _bracket_end(text, start)), MASK
    literal = _LITERAL.match(text, start)
    if literal is not None:
        return (start, literal.end()), MASK
    block = _YAML_BLOCK.match(text, start)  # password: |  and the indented lines under it
    if block is not None:
        return (start, block.end()), MASK
    stop = (_JSON_STRING_END if jsonish else _LINE_END).search(text, start)
    return (start, stop.start() if stop else len(text)), MASK


def _spaced_name(text: str, match: re.Match[str]) -> str:
    """A name written as two words (``PASS WORD = x``): the word before it joined to it."""
    before = _WORD_BEFORE.search(text, max(match.start() - 64, 0), match.start())
    return before[1] + match["bare"] if before else ""


def _is_secret_name(raw: str) -> bool:
    if is_secret_field(raw):
        return True
    return ("%" in raw or "\\" in raw or "+" in raw) and is_secret_field(_decoded(raw, plus=True))


def _quoted_end(text: str, start: int, depth: int, quote: str) -> int | None:
    """Where a string opened by ``depth`` backslashes and ``quote`` ends (after its closing
    quote), None when the text ends first. Inside a string escaped ``depth`` times, its own
    closing quote follows 2^depth - 1 backslashes (mod 2^(depth+1)); any other count is an
    escaped quote of the content."""
    depth = min(depth, 16)
    period, wanted = 2 ** (depth + 1), 2**depth - 1
    at = start
    while (found := text.find(quote, at)) != -1:
        run = 0
        while found - run - 1 >= start and text[found - run - 1] == "\\":
            run += 1
        if run % period == wanted:
            return found + 1
        at = found + 1
    return None


def _bracket_end(text: str, start: int) -> int:
    """Where the object or array opened at ``start`` closes (strings skipped), or the end."""
    depth = 0
    for token in _BRACKETS.finditer(text, start):
        bracket = token[0]
        if bracket in "[{":
            depth += 1
        elif bracket in "]}":
            depth -= 1
            if depth == 0:
                return token.end()
    return len(text)


def _part_content(
    text: str, match: re.Match[str], boundary: str | None, blank_lines: _BlankLines
) -> tuple[int, int] | None:
    """The content of a multipart part whose name is a secret's; None for another part."""
    name = _PART_NAME.search(match["part"])
    if name is None:
        return None
    value = name[1] if name[1] is not None else re.sub(r"^[\w-]*'[\w-]*'", "", name[2])  # name*=
    if not _is_secret_name(value):
        return None
    blank = blank_lines.after(max(match.end() - 2, 0))
    if blank is None:
        return None  # cut short in the part's headers: no content yet
    delimiter = re.compile(r"\r?\n--" + (re.escape(boundary) if boundary else ""))
    end = delimiter.search(text, blank.end())
    return blank.end(), end.start() if end else len(text)


class _BlankLines:
    """The first blank line at or after a position of one text. The last answer is reused
    while the position has not passed it: part headers without a blank line after them, one
    after another, must not each search the rest of the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.asked = -1
        self.found: re.Match[str] | None = None

    def after(self, start: int) -> re.Match[str] | None:
        reusable = self.asked != -1 and self.asked <= start
        if not (reusable and (self.found is None or self.found.start() >= start)):
            self.asked, self.found = start, _BLANK_LINE.search(self.text, start)
        return self.found


def _element_content(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    """The content of ``<name ...>content`` when ``name`` is a secret's; None otherwise."""
    rest = _TAG_REST.match(text, match.end())
    if rest is None or rest[0].endswith("/>") or not is_secret_field(match["tag"]):
        return None
    start, end = rest.end(), text.find("<", rest.end())
    end = len(text) if end == -1 else end
    return (start, end) if end > start else None


def _first_boundary(text: str) -> str | None:
    found = _FIRST_BOUNDARY.match(text)
    return found[1] if found else None


def _mask_form(text: str, depth: int) -> str:
    """A form-encoded text (``a=1&password=x``, a query string): the value of a secret-named
    parameter, or of one holding a secret, becomes ``***``; a name holding a secret too."""
    parts = []
    for part in text.split("&"):
        name, sep, value = part.partition("=")
        plain_name = unquote_plus(name, errors="replace")
        if _mask(plain_name, None, depth + 1) != plain_name:
            name = MASK
        if sep and value:
            plain = unquote_plus(value, errors="replace")
            # A name that is itself a sowctl secret is no secret's name: judged without it.
            if _is_secret_name(redact(plain_name)) or _mask(plain, None, depth + 1) != plain:
                value = MASK
        parts.append(name + sep + value)
    return "&".join(parts)


def _decoded(text: str, plus: bool = False) -> str:
    """``text`` with percent-encoding, ``\\uXXXX``/``\\xXX`` escapes and HTML entities
    undone (three times over at most: double encoding), NULs and lone surrogates replaced
    (nothing stores them)."""
    for _ in range(3):
        before = text
        if "%" in text:
            text = unquote_plus(text, errors="replace") if plus else unquote(text, errors="replace")
        if "\\" in text:
            text = _ESCAPE.sub(lambda m: chr(int(m[1] or m[2], 16)), text)
        if "&" in text and ";" in text:  # &quot;password&quot;
            text = html.unescape(text)
        if text == before:
            break
    return _UNSTORABLE.sub("\ufffd", text)


# --- bodies --------------------------------------------------------------------------------


def mask_body(raw: bytes | str, content_type: str | None = None, *, truncated: bool = False) -> str:
    """A request or response body as a log or record file may show it, whatever its shape.

    Valid JSON: compact JSON with secret-named fields ``"***"`` at any depth and every
    string masked as text (``redact_value``). Anything else (a form, multipart, JSON with a
    syntax error, text, a body cut short: ``truncated``) is masked as text (``mask_text``).
    Bytes are read in the charset of ``content_type`` (UTF-8 by default); bytes that are
    not text in it, or text with NULs (UTF-16 read as UTF-8), give a placeholder.
    """
    text = raw if isinstance(raw, str) else _body_text(raw, content_type, truncated)
    if text is None or "\x00" in text:
        return f"<{len(raw)} bytes, not text>"
    try:
        return json.dumps(redact_value(json.loads(text)), ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return mask_text(text, _content_type_param(content_type, "boundary"))


def _body_text(raw: bytes, content_type: str | None, truncated: bool) -> str | None:
    charset = _content_type_param(content_type, "charset")
    if charset is None:
        sniffed = [name for bom, name in _BOMS if raw.startswith(bom)]
        charset = sniffed[0] if sniffed else "utf-8"
    try:
        decoder = codecs.getincrementaldecoder(charset)("strict")
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        return decoder.decode(raw, final=not truncated)  # a cut may fall inside a character
    except (UnicodeDecodeError, ValueError):
        return None


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _content_type_param(content_type: str | None, name: str) -> str | None:
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == name and value.strip():
            return value.strip().strip('"')
    return None


def redact_value(value: Any) -> Any:
    """A JSON value for a log or record file: the values of secret-named fields replaced by
    ``***`` at any depth, and sowctl's own secrets cut wherever they appear. Other strings are
    kept as they are: a JSON body says by its field names which values are secrets, and text
    inside a value ("Rotate the API key: quarterly") is data that a record file must replay
    and a verify pattern must match unchanged."""
    if isinstance(value, dict):
        return {redact(str(k)): _field_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, str):
        return _structured_string(redact(value))
    return value


# A string that is a form (``a=1&cookie=x``): name=value pairs joined by &, no spaces.
_FORM_STRING = re.compile(r"[^\s=&]+=[^\s&]*(?:&[^\s=&]+=[^\s&]*)+")


def _structured_string(text: str) -> str:
    """A string value that is itself JSON or a form, masked as such when it holds a secret
    by name; any other string, and one that holds none, unchanged."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            inner = json.loads(text)
        except (ValueError, RecursionError):
            return text
        masked = redact_value(inner)
        return text if masked == inner else json.dumps(masked, ensure_ascii=False)
    if _FORM_STRING.fullmatch(text):
        return _mask_form(text, 0)
    return text


def _field_value(name: str, value: Any) -> Any:
    return MASK if is_secret_field(name) else redact_value(value)


# --- log lines, request targets, headers -------------------------------------------------


def redact_text(text: str) -> str:
    """A log line or message: ``mask_text`` (the one rule for any text)."""
    return mask_text(text)


def redact_target(path: str, query: str) -> str:
    """A request target for a log: the path masked as text (judged percent-decoded too:
    ``sowt%5F...`` is a secret), and the query as a form: the value of every parameter with
    a secret's name, or holding a secret, replaced by ``***``, a name holding one too."""
    target = mask_text(path)
    return target + "?" + _mask_form(query, 0) if query else target


def redact_header_value(value: str) -> str:
    """A header value for the request log: masked as text and, in a URL (a ``Referer``),
    the query masked as ``redact_target`` does."""
    if "?" not in value:
        return mask_text(value)
    base, _, query = value.partition("?")
    query, hash_sign, fragment = query.partition("#")
    return redact_target(base, query) + hash_sign + mask_text(fragment)


def secret_hint(secret: str | None) -> str:
    """What listings, status and errors may show of a token or API key: its prefix and a
    few characters (``sowt_abcd…``), never enough to use it."""
    if not secret:
        return ""
    return secret[:9] + "…" if len(secret) > 12 else "…"
