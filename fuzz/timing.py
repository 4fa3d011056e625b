"""Seconds of CPU for govern() on pathological text (docs/hardening.md's table).

    python -m fuzz.timing

Not a test (timings are not deterministic); the tests check the property that
bounds the time instead: the byte-pair merge is never handed a long piece.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable

from context_governor import govern, warm_up

MB = 1_000_000


def _inputs() -> dict[str, Callable[[], list[dict[str, str]]]]:
    rnd = random.Random(0)
    return {
        "10 MB of one character": lambda: [{"role": "user", "content": "a" * 10 * MB}],
        "10 MB of one emoji": lambda: [{"role": "user", "content": "😀" * (10 * MB // 4)}],
        "10 MB random base64, no spaces": lambda: [
            {"role": "user", "content": base64.b64encode(rnd.randbytes(7_500_000)).decode()}
        ],
        "1 MB of spaces": lambda: [{"role": "user", "content": " " * MB}],
        "10 messages x 1 MB of one character": lambda: [
            {"role": "user" if i % 2 == 0 else "assistant", "content": chr(97 + i) * MB}
            for i in range(10)
        ],
    }


def main() -> None:
    warm_up(["gpt-4o"])
    print(f"{'input':<40} {'model':<8} {'CPU s':>6}")
    for label, make in _inputs().items():
        messages = make()
        for model in ("gpt-4o", "gpt-4"):
            started = time.process_time()
            govern(messages, model=model, context_window=128_000)
            print(f"{label:<40} {model:<8} {time.process_time() - started:>6.2f}")


if __name__ == "__main__":
    main()
