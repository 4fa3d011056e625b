import random

import pytest

from shortlink.slugs import ALPHABET, generate_slug, is_valid_custom_slug, keyspace


def test_alphabet_has_no_confusables():
    for ch in "0O1lI":
        assert ch not in ALPHABET


@pytest.mark.parametrize("length", [4, 7, 12])
def test_generated_length(length):
    assert len(generate_slug(length)) == length


def test_generated_uses_alphabet_only():
    rng = random.Random(1234)
    slug = generate_slug(200, choice=rng.choice)
    assert set(slug) <= set(ALPHABET)


def test_zero_length_is_an_error():
    with pytest.raises(ValueError):
        generate_slug(0)


@pytest.mark.parametrize(
    ("slug", "ok"),
    [("abc", True), ("launch_2024-v2", True), ("ab", False), ("API", False), ("a/b", False)],
)
def test_custom_slugs(slug, ok):
    assert is_valid_custom_slug(slug) is ok


def test_keyspace():
    assert keyspace(7) == len(ALPHABET) ** 7
