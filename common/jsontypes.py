"""The type of what ``json`` reads and writes, for records' ``to_dict``/``from_dict`` at a file
or wire edge: a record serializes to a :data:`JsonObject`, and mypy checks that nothing but
JSON values (no sets, tuples of records, dataclasses, Paths) goes in."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
