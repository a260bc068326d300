"""Reading a configuration file people write (thresholds, families, judge specs, rubrics): bounded YAML.

``yaml.safe_load`` builds what a file describes, and an alias can name a list that names lists: nine
levels of nine aliases (a "billion laughs" file of a few hundred bytes) stand for 9⁹ values, built
as shared references at once but expanded by whatever walks them next (JSON, hashing, a copy) into
minutes of work and a MemoryError. :func:`load_yaml` refuses such a file before anything is built:

- a file over :data:`MAX_BYTES`, or text that is not UTF-8 (the byte is named);
- a document whose node graph, with every alias expanded, would hold more than :data:`MAX_NODES`
  nodes (counted over the composed graph with each node's size memoised: linear in the file);
- a mapping that names a key twice (YAML forbids it; PyYAML keeps the last silently).

Each error is a :class:`ConfigError` whose message starts with the file (and, where known, the field).
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import yaml

from judgecal.errors import ConfigError

MAX_BYTES = 1_000_000
MAX_NODES = 100_000


# libyaml's parser when PyYAML was built with it (about 5x faster), else the pure-Python one
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):  # type: ignore[valid-type,misc]
    origin = ""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                break
            if first is not None:
                raise ConfigError(f"{self.origin}: {key}: duplicate key (line {first} and line {line})")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes in ``root``'s tree with every alias expanded; stops past ``limit``."""
    memo: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = 1  # a recursive alias counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        memo[key] = total
        if total > limit:
            raise OverflowError
        return total

    return size(root)


def parse_yaml(text: str, origin: str) -> Any:
    """``text`` (YAML) as Python values, bounded as the module docstring says."""
    loader = _Loader(text)
    loader.origin = origin
    try:
        node = loader.get_single_node()  # type: ignore[no-untyped-call]
        if node is None:
            return None
        try:
            _expanded_size(node, MAX_NODES)
        except OverflowError:
            raise ConfigError(f"{origin}: expands to more than {MAX_NODES:,} values through its aliases "
                              "(&anchor/*alias); write the values out") from None
        return loader.construct_document(node)  # type: ignore[no-untyped-call]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{origin}: not valid YAML ({where}{what})") from None
    except RecursionError:
        raise ConfigError(f"{origin}: not valid YAML (nested too deeply)") from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]


def read_text(path: Path, origin: str | None = None) -> str:
    """A configuration file's text: at most :data:`MAX_BYTES`, UTF-8 (a byte-order mark allowed)."""
    where = origin or str(path)
    if not path.is_file():
        raise ConfigError(f"{where}: not a file")
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{where}: larger than {MAX_BYTES:,} bytes; a configuration file is small")
    try:
        return data.decode("utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{where}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                          f"{exc.start}); save the file as UTF-8") from None


def load_yaml(path: str | Path, origin: str | None = None) -> Any:
    """The YAML file ``path`` as Python values (see the module docstring); ``origin`` names it in messages."""
    p = Path(path)
    return parse_yaml(read_text(p, origin), origin or str(p))


def read_yaml_as(path: Path, error: type[ConfigError]) -> Any:
    """:func:`load_yaml` of ``path``, its failures raised as ``error`` (a subclass naming the file's kind), an
    unreadable file with the reason the system gave."""
    try:
        return load_yaml(path)
    except ConfigError as exc:
        raise error(str(exc)) from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
