"""A serializer's checks made quickly for the plain values agents send, read off its fields.

Validating a recall's body with DRF's serializer (copying fields, running each through
`run_validation`) cost a tenth of the request. `quick_validated` accepts what is plainly valid
(exact types, within limits, nothing to trim or convert, no unknown field) and returns what the
serializer would; anything else, or any field it does not know how to check, is None, and the
serializer decides, with its own errors. tests/api/test_quick_checks.py holds the two to the
same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.validators import (
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
)
from rest_framework import serializers
from rest_framework.fields import (
    ProhibitNullCharactersValidator,
    ProhibitSurrogateCharactersValidator,
    empty,
)

from memapp.api.serializers import StrictSerializer, Text

__all__ = ["quick_validated"]

_NO = object()  # not plainly valid: the serializer decides
Check = Callable[[Any], Any]

_CHAR_VALIDATORS = (
    MaxLengthValidator,
    MinLengthValidator,
    ProhibitNullCharactersValidator,
    ProhibitSurrogateCharactersValidator,
)
_LENGTH_VALIDATORS = (MaxLengthValidator, MinLengthValidator)
_VALUE_VALIDATORS = (MaxValueValidator, MinValueValidator)


def _between(value: int, low: int | None, high: int | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _within(size: int, field) -> bool:
    return _between(size, field.min_length, field.max_length)


def _char(field: serializers.CharField) -> Check:
    def check(value):
        if value is None:
            return None if field.allow_null else _NO
        if type(value) is not str:
            return _NO
        if value == "":
            return "" if field.allow_blank else _NO
        if field.trim_whitespace and value.strip() != value:
            return _NO
        if not _within(len(value), field) or "\x00" in value:
            return _NO
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate
            return _NO
        return value

    return check


def _list(field: serializers.ListField, child: Check) -> Check:
    def check(value):
        if type(value) is not list or not _within(len(value), field):
            return _NO
        if not value and not field.allow_empty:
            return _NO
        items = [child(item) for item in value]
        return _NO if any(item is _NO for item in items) else items

    return check


def _choice(field: serializers.ChoiceField) -> Check:
    def check(value):
        if value is None:
            return None if field.allow_null else _NO
        if type(value) is not str or value == "":
            return _NO
        return field.choice_strings_to_values.get(value, _NO)

    return check


def _integer(field: serializers.IntegerField) -> Check:
    def check(value):
        if value is None:
            return None if field.allow_null else _NO
        if type(value) is not int:
            return _NO
        return value if _between(value, field.min_value, field.max_value) else _NO

    return check


def _only(field, kinds: tuple[type, ...]) -> bool:
    return all(isinstance(validator, kinds) for validator in field.validators)


def _check(field) -> Check | None:
    """How to check `field` quickly, or None: one it has no quick check of."""
    if field.read_only or field.source not in (None, field.field_name):
        return None
    kind = type(field)
    if kind in (serializers.CharField, Text) and _only(field, _CHAR_VALIDATORS):
        return _char(field)
    if kind is serializers.ChoiceField and not field.validators and not field.allow_blank:
        return _choice(field)
    if kind is serializers.IntegerField and _only(field, _VALUE_VALIDATORS):
        return _integer(field)
    if kind is serializers.ListField and _only(field, _LENGTH_VALIDATORS):
        child = _check(field.child)
        return None if child is None else _list(field, child)
    return None


def _with_method(check: Check, method: Callable[[Any], Any]) -> Check:
    """`check`, then the serializer's own `validate_<field>`."""

    def checked(value):
        value = check(value)
        if value is _NO:
            return _NO
        try:
            return method(value)
        except serializers.ValidationError:
            return _NO

    return checked


class _Plan:
    """Each field's check, whether it is required, and its default."""

    def __init__(self, serializer_class: type[serializers.Serializer]) -> None:
        serializer = serializer_class()
        self.fields: dict[str, tuple[Check, bool, Any]] | None = {}
        # A serializer-wide `validate` beyond refusing unknown fields (which `quick_validated`
        # does): only the serializer knows.
        if serializer_class.validate is not StrictSerializer.validate:
            self.fields = None
            return
        for name, field in serializer.fields.items():
            check = _check(field)
            if check is None:
                self.fields = None
                return
            method = getattr(serializer, f"validate_{name}", None)
            if method is not None:
                check = _with_method(check, method)
            self.fields[name] = (check, field.required, field.default)


_plans: dict[type, _Plan] = {}


def quick_validated(serializer_class: type[serializers.Serializer], data) -> dict | None:
    """What `serializer_class` validates `data` to, when `data` is plainly valid; else None."""
    plan = _plans.get(serializer_class)
    if plan is None:
        plan = _plans[serializer_class] = _Plan(serializer_class)
    fields = plan.fields
    if fields is None or type(data) is not dict or not data.keys() <= fields.keys():
        return None
    result = {}
    for name, (check, required, default) in fields.items():
        if name in data:
            value = check(data[name])
            if value is _NO:
                return None
        elif required or default is empty:
            return None
        else:
            value = default() if callable(default) else default
        result[name] = value
    return result
