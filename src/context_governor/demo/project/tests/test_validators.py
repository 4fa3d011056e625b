import pytest

from shortlink.validators import UrlError, normalize_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://example.com", "https://example.com/"),
        ("HTTPS://Example.COM/Path", "https://example.com/Path"),
        ("http://example.com:80/", "http://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("  https://example.com/?q=1#frag  ", "https://example.com/?q=1#frag"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
    ],
)
def test_normalize(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "ftp://example.com/file",
        "javascript:alert(1)",
        "https://",
        "http://localhost:5000/admin",
        "http://127.0.0.1/",
        "http://10.0.0.8/internal",
        "http://[::1]/",
        "https://user:pass@example.com/",
        "https://example.com:99999/",
    ],
)
def test_rejected(raw):
    with pytest.raises(UrlError):
        normalize_url(raw)


def test_too_long():
    with pytest.raises(UrlError, match="longer than 50"):
        normalize_url("https://example.com/" + "a" * 40, max_length=50)


def test_blocked_hosts_include_subdomains():
    with pytest.raises(UrlError, match="not allowed"):
        normalize_url("https://cdn.evil.example/x", blocked_hosts=("evil.example",))
    assert normalize_url("https://notevil.example/", blocked_hosts=("evil.example",))


def test_non_string_is_rejected():
    with pytest.raises(UrlError, match="required"):
        normalize_url(None)
