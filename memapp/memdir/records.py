"""`Record`: a named tuple class written as with `typing.NamedTuple`, made without `typing`.

Every hook is a new process, and importing `typing`, then building each `NamedTuple` class
(a compile per field for its string annotations), was a fifth of what the prompt hook added to
Python's own start (docs/scaling.md). To the type checker `Record` is `typing.NamedTuple`; at
run time a subclass of `Record` becomes a `collections.namedtuple` of its annotated fields
(their defaults trailing, as NamedTuple requires), with the class's own methods and docstring
on top. Modules a hook loads import their typing names under `TYPE_CHECKING = False` (the
checkers read it as `typing.TYPE_CHECKING`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:
    from collections import namedtuple

    class _RecordType(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:  # `Record` itself
                return super().__new__(mcls, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            base = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            body = {key: value for key, value in namespace.items() if key not in fields}
            return type(name, (base,), {**body, "__slots__": ()})

    class Record(metaclass=_RecordType):
        """Subclass with annotated fields, as `typing.NamedTuple`."""


__all__ = ["Record"]
