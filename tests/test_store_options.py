"""docmem.options: one parser for every backend's options, typed errors that name the option."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import msgspec
import pytest

from docmem.errors import StoreNotConfigured
from docmem.options import Seconds, check_options, parse_options, query_options, split_options

URL = "demo:///root"


class Demo(msgspec.Struct, frozen=True, kw_only=True):
    wait: Seconds = 1.0
    count: Annotated[int, msgspec.Meta(ge=0, le=10, description="a whole number from 0 to 10")] = 3
    flag: bool = False
    label: str | None = None
    mode: Annotated[Literal["fast", "safe"] | None, msgspec.Meta(description="fast or safe")] = None
    plain: int = 0
    ratio: float = 0.5

    def __post_init__(self) -> None:
        if self.count > 5 and self.flag:
            raise ValueError("count above 5 needs flag false")


def parsed(query: str = "", **options: Any) -> Demo:
    return parse_options(Demo, f"{URL}?{query}", options, scheme="demo")


def refusal(query: str = "", **options: Any) -> StoreNotConfigured:
    with pytest.raises(StoreNotConfigured) as caught:
        parsed(query, **options)
    return caught.value


# -- merging ------------------------------------------------------------------------------


def test_defaults_when_nothing_is_given() -> None:
    assert parsed() == Demo()


def test_keywords_win_over_the_query() -> None:
    assert parsed("wait=2&count=4", wait=7) == Demo(wait=7.0, count=4)


def test_the_query_keeps_blank_values() -> None:
    assert query_options("x://h/p?a=&b=1&a=2") == {"a": "2", "b": "1"}
    assert query_options("x://h/p?a=") == {"a": ""}


def test_unknown_names_are_refused_with_the_known_ones() -> None:
    message = str(refusal("bogus=1", other=2))
    assert message.startswith("unknown demo:// options: bogus, other (known: wait, count, flag")


def test_split_hands_back_the_rest_unconverted() -> None:
    ours, rest = split_options(Demo, f"{URL}?count=2&endpoint=x", {"retries": 3}, scheme="demo")
    assert ours == Demo(count=2)
    assert rest == {"endpoint": "x", "retries": 3}


# -- text, from a URL or a keyword ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("2", 2.0), (" 0.5 ", 0.5), (".5", 0.5), ("1e3", 1000.0), ("+3", 3.0)]
)
def test_text_is_a_number_of_seconds_as_python_reads_it(text: str, seconds: float) -> None:
    assert parsed(f"wait={text}").wait == seconds
    assert parsed(wait=text).wait == seconds


@pytest.mark.parametrize("text", ["3.0", "1e3", "2.5", "", "x", "0x10", "inf"])
def test_a_count_written_as_text_must_be_whole(text: str) -> None:
    assert "count must be a whole number from 0 to 10" in str(refusal(f"count={text}"))


@pytest.mark.parametrize("word", ["1", "true", "YES", "On", " true "])
def test_flag_words_for_true(word: str) -> None:
    assert parsed(f"flag={word}").flag is True


@pytest.mark.parametrize("word", ["0", "false", "No", "OFF", ""])
def test_flag_words_for_false(word: str) -> None:
    assert parsed(f"flag={word}").flag is False


def test_blank_text_is_not_given_for_optional_text() -> None:
    assert parsed("label=&mode=") == Demo()
    assert parsed("label=x&mode=safe") == Demo(label="x", mode="safe")


# -- typed keywords ------------------------------------------------------------------------


def test_an_int_is_a_float_and_a_whole_float_a_count() -> None:
    assert parsed(wait=2, count=4.0, plain=2.0) == Demo(wait=2.0, count=4, plain=2)
    assert isinstance(parsed(wait=2).wait, float)
    assert isinstance(parsed(count=4.0).count, int)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("wait", True),
        ("wait", None),
        ("count", False),
        ("count", 2.5),
        ("count", math.nan),
        ("flag", 1),
        ("flag", 0),
        ("flag", None),
        ("label", 5),
        ("label", b"x"),
        ("mode", "slow"),
        ("plain", [1]),
        ("ratio", {}),
    ],
    ids=repr,
)
def test_a_bool_is_never_a_number_nor_a_number_a_flag(option: str, value: Any) -> None:
    assert f"demo:// option {option} must be" in str(refusal(**{option: value}))


# -- ranges and checks across options ------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, -math.inf, 10**400, "1e999", "nan"])
def test_seconds_are_positive_and_finite(value: Any) -> None:
    message = str(refusal(wait=value))
    assert message == "demo:// option wait must be a positive, finite number of seconds"


def test_range_from_meta_and_its_description() -> None:
    assert parsed(count=10).count == 10
    assert str(refusal(count=11)) == "demo:// option count must be a whole number from 0 to 10"


def test_a_description_comes_from_the_kind_when_meta_has_none() -> None:
    assert str(refusal(flag="maybe")) == "demo:// option flag must be true or false"
    assert str(refusal(plain="x")) == "demo:// option plain must be a whole number"
    assert str(refusal(ratio="x")) == "demo:// option ratio must be a number"
    assert str(refusal(label=1)) == "demo:// option label must be text"


def test_a_check_across_options_comes_from_post_init() -> None:
    assert str(refusal("count=6", flag=True)) == "demo:// options: count above 5 needs flag false"


# -- what an error carries -----------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["wait=s3cr3t-value", "count=s3cr3t-value", "flag=s3cr3t-value", "mode=s3cr3t-value"],
)
def test_an_error_names_the_option_never_the_value(query: str) -> None:
    error = refusal(query)
    assert query.split("=")[0] in str(error)
    assert "s3cr3t" not in str(error)
    assert error.__context__ is None
    assert error.__cause__ is None


def test_check_options_is_what_an_init_calls() -> None:
    assert check_options(Demo, {"wait": "2", "flag": "yes"}, scheme="demo") == Demo(
        wait=2.0, flag=True
    )
    with pytest.raises(StoreNotConfigured, match="wait"):
        check_options(Demo, {"wait": 0}, scheme="demo")


def test_check_options_refuses_a_name_that_is_no_field() -> None:
    with pytest.raises(TypeError, match="bogus"):
        check_options(Demo, {"bogus": 1}, scheme="demo")
