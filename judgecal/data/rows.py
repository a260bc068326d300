"""Rows of a Parquet file as their JSON equivalents, and the small normalisations real files need.

pandas hands Parquet's nested columns over as NumPy arrays (``list``), lists of pairs (``map``) and
``decimal.Decimal`` values, none of which is JSON. Reading through Arrow's own types instead gives each
value its JSON equivalent: a ``list`` is a list, a ``map`` and a ``struct`` an object, a decimal a number
(an integer when it is whole), a date or time its ISO 8601 text. A column that pandas wrote for its
index (``__index_level_0__``) is not data and is left out.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from pathlib import Path
from typing import Any

_INDEX_COLUMN = re.compile(r"__index_level_\d+__")


def json_value(value: Any, typ: Any) -> Any:
    """``value`` (as Arrow's ``to_pylist`` gives it) of Arrow type ``typ`` as its JSON equivalent."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(typ):
        return {str(k): json_value(v, typ.item_type) for k, v in value}
    if pa.types.is_struct(typ):
        return {typ.field(i).name: json_value(value.get(typ.field(i).name), typ.field(i).type)
                for i in range(typ.num_fields)}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return [json_value(v, typ.value_type) for v in value]
    if pa.types.is_dictionary(typ):
        return json_value(value, typ.value_type)
    return plain(value)


def plain(value: Any) -> Any:
    """A scalar as JSON would hold it: a whole decimal as an int, other decimals as floats, dates and
    times as ISO 8601 text; everything else unchanged."""
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return float(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return value


def parquet_rows(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Every row (or the first ``limit``) of the Parquet file ``path`` as a dict of JSON values (see the
    module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if limit is None:
        table = pq.read_table(path)
    else:
        pf = pq.ParquetFile(path)
        batch = next(pf.iter_batches(batch_size=limit), None)
        table = pa.Table.from_batches([batch]) if batch is not None else pf.schema_arrow.empty_table()
    keep = [name for name in table.column_names if not _INDEX_COLUMN.fullmatch(name)]
    table = table.select(keep)
    columns = {name: [json_value(v, table.schema.field(name).type) for v in table.column(name).to_pylist()]
               for name in keep}
    return [{name: columns[name][i] for name in keep} for i in range(table.num_rows)]


# Beyond 2**53 a float no longer holds every integer: two ids there can be the same float.
_EXACT_FLOAT = 2**53


def whole_id(value: Any) -> Any:
    """An id written as a whole-number float (``3.0``, as a Parquet or JSON column with a missing value
    stores integers) is that integer, when it is below 2**53 in magnitude (where every integer is a float of
    its own); anything else unchanged (and refused as an id, :func:`id_problem`)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < _EXACT_FLOAT:
        return int(value)
    return value


def id_problem(value: Any) -> str:
    """Why ``value`` (after :func:`whole_id`) is not an id: not a non-empty string or an integer, and for a
    float, which one."""
    if isinstance(value, float) and not isinstance(value, bool):
        if math.isfinite(value) and value.is_integer():
            return (f"is the float {value:.17g}, of magnitude 2**53 or more, where distinct integer ids can be "
                    "stored as the same float: write the ids as text (or as integers, not floats)")
        return f"must be a non-empty string or an integer, got the float {value!r}"
    return "must be a non-empty string or an integer"


DEGENERATE = {"empty_responses": "empty response(s) kept as text",
              "zero_length_spans": "zero-length span(s) dropped (they mark nothing)",
              "skipped_labels": "null label(s) read as skipped",
              "duplicate_labels": "label(s) one person gave again, the same, kept once"}


def degenerate_note(counts: dict[str, int]) -> str:
    """``"; accepted: 1 empty response(s) kept as text, ..."`` for the non-zero counts, else ``""``."""
    parts = [f"{counts[k]} {what}" for k, what in DEGENERATE.items() if counts.get(k)]
    return f"; accepted: {', '.join(parts)}" if parts else ""
