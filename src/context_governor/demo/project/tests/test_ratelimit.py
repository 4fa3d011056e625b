import pytest

from shortlink.ratelimit import RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def test_burst_then_block(clock):
    limiter = RateLimiter(capacity=3, refill_per_second=1.0, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]


def test_refills_over_time(clock):
    limiter = RateLimiter(capacity=2, refill_per_second=0.5, clock=clock)
    assert limiter.allow("a") and limiter.allow("a")
    assert not limiter.allow("a")
    clock.advance(2.0)
    assert limiter.allow("a")


def test_keys_are_independent(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=1.0, clock=clock)
    assert limiter.allow("a")
    assert limiter.allow("b")
    assert not limiter.allow("a")


def test_retry_after(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=0.25, clock=clock)
    limiter.allow("a")
    assert limiter.retry_after("a") == pytest.approx(4.0)


def test_eviction_keeps_memory_bounded(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=1.0, clock=clock, max_keys=100)
    for n in range(1_000):
        limiter.allow(f"client-{n}")
        clock.advance(0.01)
    assert len(limiter._buckets) <= 100


@pytest.mark.slow
def test_api_returns_429_with_retry_after(app, client):
    app.extensions["shortlink.limiter"] = RateLimiter(capacity=2, refill_per_second=0.1)
    for _ in range(2):
        assert client.post("/api/links", json={"url": "https://example.com/"}).status_code == 201
    resp = client.post("/api/links", json={"url": "https://example.com/"})
    assert resp.status_code == 429
    assert int(resp.headers["Retry-After"]) >= 1


def test_reads_are_not_limited(app, client):
    app.extensions["shortlink.limiter"] = RateLimiter(capacity=1, refill_per_second=0.01)
    for _ in range(5):
        assert client.get("/api/links/whatever").status_code == 404
