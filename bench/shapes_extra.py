"""Session shapes where content-aware compression matters: JSON from APIs, CI logs.

Two more kinds of agent session, generated with fixed seeds like bench/shapes.py's (the
same bytes in any process; derived from bench/sessions.py's ``_Session``):

* **API / JSON-heavy** -- an operations agent that queries REST APIs: each call returns
  a JSON array of records (orders, tickets, users, events, invoices) of 5-40 KB, half of
  them pretty-printed, half compact, one in five wrapped in a ``{"data": [...]}`` page;
* **CI logs** -- an agent that fixes a red CI: it fetches whole job logs (1,000-2,000
  lines: ANSI colour codes, ``\\r`` progress redraws, repeated warnings, thousands of
  passing test lines and a few failures with their tracebacks), reads and edits files,
  and reruns the failing tests.

They are kept out of bench/shapes.py's ``SHAPES`` so that the sections written from that
list stay byte for byte as they are; bench/headroom_side.py measures them (with
bench/shapes.py's research shape for search-heavy agents).
"""

from __future__ import annotations

import json
import random
from typing import Any

from .sessions import (
    NOUNS,
    PACKAGES,
    SEED,
    TOOLS,
    Message,
    _ident,
    _Session,
)
from .shapes import Shape, _generate, _tool_def

# ----------------------------------------------------------------------------- JSON / APIs

API_PROMPT = """You are Ledger Ops, an operations agent for an online shop. You answer \
questions about orders, customers, tickets and invoices by calling the shop's REST APIs \
through the tools you are given. Always check the data before you answer: quote record \
ids, amounts and dates exactly as the API returned them. When a question needs several \
pages or resources, fetch them all before you conclude. Never modify data unless the \
user asks you to."""

API_TASKS = (
    "Which customers placed more than three orders last week that are still unpaid? "
    "List them with their open totals.",
    "Ticket volume doubled since Monday. Find out which product or release is behind it.",
    "Reconcile last month's invoices against the orders: which invoices have no order, or "
    "a different total?",
    "A customer says she was charged twice for one order. Her email is in the ticket "
    "queue; find the order and the duplicate payment.",
    "Which warehouses shipped late this week, and which carriers were they using?",
    "Summarize the refunds issued in the last 14 days by reason and by agent.",
)

API_TOOLS = [
    _tool_def(
        "api_get",
        "GET a resource collection from the shop API; returns the JSON body.",
        {"path": {"type": "string"}, "params": {"type": "object"}},
    ),
    _tool_def(
        "api_post",
        "POST to the shop API (only when the user asks for a change).",
        {"path": {"type": "string"}, "body": {"type": "object"}},
    ),
]

RESOURCES = ("orders", "tickets", "customers", "events", "invoices")
STATUSES = {
    "orders": ("pending", "paid", "shipped", "delivered", "refunded", "cancelled"),
    "tickets": ("open", "pending", "solved", "closed"),
    "customers": ("active", "inactive", "suspended"),
    "events": ("info", "warning", "error"),
    "invoices": ("draft", "sent", "paid", "overdue", "void"),
}
FIRST = (
    "Ana", "Ben", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun",
    "Kemal", "Lena", "Mateo", "Nia", "Omar", "Petra", "Quinn", "Rosa", "Sven", "Tariq",
)  # fmt: skip
LAST = (
    "Almeida", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Horvat",
    "Ito", "Jansen", "Kowalski", "Larsen", "Moreau", "Novak", "Okafor", "Petrov",
)  # fmt: skip
TAGS = ("billing", "shipping", "damaged", "late", "refund", "vip", "duplicate", "size")
SKUS = ("TSHIRT", "MUG", "HOODIE", "CAP", "POSTER", "STICKER", "BOTTLE", "TOTE", "SOCKS")
CARRIERS = ("DHL", "UPS", "PostNL", "GLS", "DPD", "FedEx")
CURRENCIES = ("EUR", "EUR", "EUR", "USD", "GBP")


def _stamp(rng: random.Random) -> str:
    return (
        f"2025-0{rng.randint(1, 3)}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


def _person(rng: random.Random) -> dict[str, Any]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return {
        "id": f"cus_{rng.getrandbits(40):010x}",
        "name": f"{first} {last}",
        "email": f"{first.lower()}.{last.lower()}@example.{rng.choice(('com', 'org', 'net'))}",
    }


def _record(rng: random.Random, resource: str, number: int) -> dict[str, Any]:
    """One record of ``resource``: the same fields for every record of a kind, as an API
    returns them (the values vary)."""
    status = rng.choice(STATUSES[resource])
    base: dict[str, Any] = {"id": f"{resource[:3]}_{number:07d}", "status": status,
                            "created_at": _stamp(rng), "updated_at": _stamp(rng)}  # fmt: skip
    if resource == "orders":
        items: list[dict[str, Any]] = [
            {
                "sku": f"{rng.choice(SKUS)}-{rng.randint(1, 40):02d}",
                "qty": rng.randint(1, 4),
                "unit_price": round(rng.uniform(4, 80), 2),
            }
            for _ in range(rng.randint(1, 4))
        ]
        base |= {
            "customer": _person(rng),
            "items": items,
            "total": round(sum(i["qty"] * i["unit_price"] for i in items), 2),
            "currency": rng.choice(CURRENCIES),
            "shipping": {
                "carrier": rng.choice(CARRIERS),
                "tracking": f"{rng.getrandbits(48):012X}",
                "warehouse": f"WH-{rng.randint(1, 6)}",
            },
            "paid": status in ("paid", "shipped", "delivered"),
        }
    elif resource == "tickets":
        base |= {
            "requester": _person(rng),
            "subject": f"{rng.choice(('Problem with', 'Question about', 'Refund for'))} "
            f"order ord_{rng.randint(1, 9_999_999):07d}",
            "priority": rng.choice(("low", "normal", "high", "urgent")),
            "assignee": rng.choice((None, f"agent_{rng.randint(1, 30):02d}")),
            "tags": rng.sample(TAGS, rng.randint(1, 3)),
        }
    elif resource == "customers":
        base |= _person(rng) | {
            "id": f"cus_{number:010x}",
            "orders_count": rng.randint(0, 60),
            "lifetime_value": round(rng.uniform(0, 4000), 2),
            "country": rng.choice(("NL", "DE", "FR", "PT", "US", "GB", "PL", "SE")),
            "marketing_opt_in": rng.random() < 0.4,
        }
    elif resource == "events":
        base |= {
            "type": f"{rng.choice(('order', 'payment', 'shipment', 'refund'))}."
            f"{rng.choice(('created', 'updated', 'failed', 'retried'))}",
            "source": rng.choice(("checkout", "webhook", "backoffice", "worker")),
            "request_id": f"req_{rng.getrandbits(64):016x}",
            "latency_ms": rng.randint(3, 2400),
        }
    else:
        base |= {
            "order_id": f"ord_{rng.randint(1, 9_999_999):07d}",
            "customer": _person(rng),
            "amount_due": round(rng.uniform(5, 900), 2),
            "amount_paid": round(rng.uniform(0, 900), 2),
            "currency": rng.choice(CURRENCIES),
            "due_date": _stamp(rng)[:10],
        }
    return base


def api_json(rng: random.Random, resource: str, size: int) -> str:
    """A JSON body of records of ``resource`` of about ``size`` characters (at least one
    record): an array, or one page of a ``{"data": [...]}`` listing; pretty-printed or
    compact."""
    indent = 2 if rng.random() < 0.5 else None
    wrapped = rng.random() < 0.2
    start = rng.randint(1, 9_000_000)
    records: list[dict[str, Any]] = []
    total = 2 + wrapped * 80
    while True:
        record = _record(rng, resource, start + len(records))
        total += len(json.dumps(record, indent=indent)) + 6
        if records and total > size:
            break
        records.append(record)
    cursor = f"cur_{rng.getrandbits(64):016x}"
    while True:
        body: Any = (
            {"data": records, "has_more": True, "next_cursor": cursor} if wrapped else records
        )
        text = json.dumps(body, indent=indent)
        if len(text) <= size or len(records) == 1:
            return text
        records.pop()


class _JsonApi(_Session):
    """An operations agent whose tool results are JSON records from an API, 5-40 KB."""

    def opening(self) -> list[Message]:
        return [
            {"role": "system", "content": API_PROMPT},
            {"role": "user", "content": API_TASKS[0]},
        ]

    def step(self) -> list[Message]:
        rng = self.rng
        self.since_user += 1
        if self.since_user >= self.next_user:
            self.since_user = 0
            self.next_user = 25 + rng.randint(-5, 5)
            self.task += 1
            return [
                {"role": "assistant", "content": self._answer()},
                {"role": "user", "content": API_TASKS[self.task % len(API_TASKS)]},
            ]
        return self.tool_step(rng.choice((1, 1, 1, 2)))

    def _answer(self) -> str:
        rng = self.rng
        rows = "\n".join(
            f"- ord_{rng.randint(1, 9_999_999):07d}: {rng.choice(FIRST)} {rng.choice(LAST)}, "
            f"{rng.uniform(10, 900):.2f} EUR, {rng.choice(STATUSES['orders'])}"
            for _ in range(rng.randint(3, 8))
        )
        return f"Here is what the API shows:\n\n{rows}\n\nI checked every page of the listing."

    def _tool(self, kind: str) -> tuple[str, dict[str, Any], str]:
        rng = self.rng
        resource = rng.choice(RESOURCES)
        params = {"status": rng.choice(STATUSES[resource]), "limit": 100,
                  "created_after": _stamp(rng)[:10]}  # fmt: skip
        return (
            "api_get",
            {"path": f"/v2/{resource}", "params": params},
            api_json(rng, resource, rng.randint(5_000, 40_000)),
        )


# ----------------------------------------------------------------------------- CI logs

CI_PROMPT = """You are a CI fixer. A pull request's pipeline is red: fetch the failing \
jobs' logs, find the first real failure (not the noise after it), read the code it points \
at, fix it with the smallest change, and rerun the failing tests until the pipeline is \
green. Quote the failing assertion and the file and line in your reasoning."""

CI_TASKS = (
    "The pipeline on PR #4127 is red (jobs test-py311 and test-py312). Please fix it.",
    "Green now, thanks. The nightly build also fails on main since yesterday; look at it.",
    "Another one: the integration job times out on the release branch. Can you check?",
    "The lint job flags something on PR #4150 that passes locally. What is going on?",
)

CI_TOOLS = [
    _tool_def("ci_job_log", "Fetch a CI job's whole log.", {"job": {"type": "string"}}),
    *TOOLS[:3],
    TOOLS[5],
]

ESC = "\x1b"
GREEN, RED, YELLOW, BOLD, DIM, RESET = (
    f"{ESC}[32m", f"{ESC}[31m", f"{ESC}[33m", f"{ESC}[1m", f"{ESC}[2m", f"{ESC}[0m"
)  # fmt: skip
WARNINGS = (
    "DeprecationWarning: datetime.datetime.utcnow() is deprecated and scheduled for removal",
    "PytestUnraisableExceptionWarning: Exception ignored in: <socket.socket fd=-1>",
    "ResourceWarning: unclosed file <_io.TextIOWrapper name='fixtures/seed.json'>",
    "npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.",
)


def _progress(rng: random.Random, name: str) -> str:
    """A download drawn as pip draws it: one line redrawn with ``\\r`` a dozen times."""
    size = rng.uniform(1, 800)
    frames = []
    for step in range(1, 13):
        done = size * step / 12
        bar = "━" * (step * 3) + " " * (36 - step * 3)
        frames.append(
            f"   {RED if step < 12 else GREEN}{bar}{RESET} {done:.1f}/{size:.1f} MB "
            f"{rng.uniform(5, 90):.1f} MB/s eta 0:00:{12 - step:02d}"
        )
    return f"  Downloading {name} ({size:.1f} MB)\n" + "\r".join(frames)


def _setup(rng: random.Random, job: str) -> list[str]:
    lines = [
        f"{BOLD}##[group]Run actions/checkout@v4{RESET}",
        "Syncing repository: orbit/orbit",
        f"{DIM}Fetching the repository{RESET}",
        "##[endgroup]",
        f"{BOLD}##[group]Run python -m pip install -e '.[dev]'{RESET}",
    ]
    for package in rng.sample(("numpy", "pydantic", "sqlalchemy", "httpx", "redis", "celery",
                               "boto3", "grpcio", "cryptography", "psycopg"), 6):  # fmt: skip
        version = f"{rng.randint(1, 3)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        lines.append(f"Collecting {package}=={version}")
        lines.append(_progress(rng, f"{package}-{version}-cp312-manylinux_2_28_x86_64.whl"))
    lines += [
        "Successfully installed " + " ".join(f"{_ident(rng)}-1.{i}" for i in range(12)),
        "##[endgroup]",
        f"{BOLD}##[group]Run python -m pytest -v -p no:cacheprovider ({job}){RESET}",
        f"{BOLD}============================= test session starts =============================="
        f"{RESET}",
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /home/runner/work/orbit/orbit",
    ]
    return lines


def _traceback(rng: random.Random, test: str, path: str) -> list[str]:
    mod = rng.choice(PACKAGES)
    return [
        f"{RED}{BOLD}_{'_' * 20} {test} {'_' * 20}{RESET}",
        "",
        f"client = <starlette.testclient.TestClient object at 0x7f{rng.getrandbits(36):09x}>",
        "",
        f"    def {test}(client):",
        f'        resp = client.post("/v1/{rng.choice(NOUNS)}s", json={{"id": 7}})',
        f">       assert resp.status_code == {rng.choice((200, 201))}",
        f"{RED}E       assert 500 == {rng.choice((200, 201))}{RESET}",
        f"{RED}E        +  where 500 = <Response [500]>.status_code{RESET}",
        "",
        f"{path}:{rng.randint(10, 300)}: AssertionError",
        "----------------------------- Captured log call ------------------------------",
        f"ERROR    orbit.{mod}.{rng.choice(NOUNS)}s:{rng.choice(NOUNS)}s.py:{rng.randint(10, 400)} "
        f"{_ident(rng)} failed",
        "Traceback (most recent call last):",
        f'  File "/home/runner/work/orbit/orbit/src/orbit/{mod}/{rng.choice(NOUNS)}s.py", '
        f"line {rng.randint(10, 400)}, in {_ident(rng)}",
        f"    return self.{_ident(rng)}({rng.choice(NOUNS)}, strict=strict)",
        f"{rng.choice(('KeyError', 'TypeError', 'AttributeError'))}: '{rng.choice(NOUNS)}'",
    ]


def ci_log(rng: random.Random, job: str, paths: list[str], lines: int) -> str:
    """A CI job's log of about ``lines`` lines (see the module docstring); 1-3 failures."""
    out = _setup(rng, job)
    tests = [p for p in paths if p.startswith("tests/")]
    total = max(lines - len(out) - 60, 200)
    failing = set(rng.sample(range(total), rng.randint(1, 3)))
    failed: list[tuple[str, str]] = []
    for n in range(total):
        path = rng.choice(tests)
        test = f"test_{_ident(rng)}_{rng.choice(('ok', 'expired', 'missing', 'twice'))}"
        pct = f"[{(n + 1) * 100 // total:3d}%]"
        if n in failing:
            out.append(f"{path}::{test} {RED}FAILED{RESET}{' ' * 10}{RED}{pct}{RESET}")
            failed.append((path, test))
        else:
            out.append(f"{path}::{test} {GREEN}PASSED{RESET}{' ' * 10}{GREEN}{pct}{RESET}")
        if rng.random() < 0.02:
            out.append(f"{YELLOW}  {rng.choice(WARNINGS)}{RESET}")
    out.append(f"{RED}{BOLD}{'=' * 30} FAILURES {'=' * 30}{RESET}")
    for path, test in failed:
        out += _traceback(rng, test, path)
    out.append(f"{YELLOW}{'=' * 30} warnings summary {'=' * 30}{RESET}")
    for warning in WARNINGS[:3]:
        out += [f"  {warning}", f"    {rng.randint(2, 40)} occurrences"]
    out.append(f"{BOLD}{'=' * 24} short test summary info {'=' * 24}{RESET}")
    out += [f"{RED}FAILED{RESET} {path}::{test} - assert 500 == 200" for path, test in failed]
    out.append(
        f"{RED}{BOLD}{'=' * 12} {len(failed)} failed, {total - len(failed)} passed, "
        f"{rng.randint(20, 90)} warnings in {rng.uniform(60, 600):.2f}s {'=' * 12}{RESET}"
    )
    out += ["##[error]Process completed with exit code 1.", "##[endgroup]"]
    return "\n".join(out)


class _CiLog(_Session):
    """A CI-fixing agent: whole job logs (1,000-2,000 lines), reads, edits and reruns."""

    kinds = (
        ("ci_log", 0.15),
        ("read_file", 0.35),
        ("grep", 0.12),
        ("pytest", 0.13),
        ("edit_file", 0.2),
        ("git_diff", 0.05),
    )

    def opening(self) -> list[Message]:
        return [
            {"role": "system", "content": CI_PROMPT},
            {"role": "user", "content": CI_TASKS[0]},
        ]

    def step(self) -> list[Message]:
        rng = self.rng
        self.since_user += 1
        if self.since_user >= self.next_user:
            self.since_user = 0
            self.next_user = 30 + rng.randint(-5, 5)
            self.task += 1
            return [
                {"role": "assistant", "content": self._final_answer()},
                {"role": "user", "content": CI_TASKS[self.task % len(CI_TASKS)]},
            ]
        return self.tool_step(1)

    def _tool(self, kind: str) -> tuple[str, dict[str, Any], str]:
        if kind != "ci_log":
            return super()._tool(kind)
        rng = self.rng
        job = f"{rng.choice(('test-py311', 'test-py312', 'integration', 'nightly'))}"
        job_id = f"{job}/{rng.randint(10_000_000, 99_999_999)}"
        text = ci_log(rng, job, self.project.paths, rng.randint(1_000, 2_000))
        return "ci_job_log", {"job": job_id}, text


# ----------------------------------------------------------------------------- the shapes

EXTRA_SHAPES: tuple[Shape, ...] = (
    Shape(
        "json-api",
        "API / JSON-heavy",
        "JSON arrays of API records of 5-40 KB per call",
        _generate(_JsonApi, "json-api", API_TOOLS),
    ),
    Shape(
        "ci-log",
        "CI logs",
        "whole CI job logs (1,000-2,000 lines, ANSI colours, \\r redraws, a few failures) "
        "among reads, edits and test runs",
        _generate(_CiLog, "ci-log", CI_TOOLS),
    ),
)

__all__ = ["EXTRA_SHAPES", "SEED", "api_json", "ci_log"]
