from collections.abc import Iterator
from typing import Any, Optional, final, overload

from typing_extensions import Buffer, disjoint_base

def arrow_json(
    columns: list[Any], names: Optional[list[str]], nonfinite: str = "refuse"
) -> tuple[Any, list[tuple[int, int, str]]]: ...

@disjoint_base
class AvroEncoder:
    arrow_type: Any
    def __init__(self, schema: Any, arrow_type: Any, prefix: bytes = ...) -> None: ...
    def encode(self, arr: Any) -> tuple[Any, list[tuple[int, str, str]]]: ...

def split_lines(buf: Buffer, end: int = ...) -> tuple[bytearray, bytearray, int, bool]: ...

@final
class Lines:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def data(self) -> bytearray: ...
    @property
    def offsets(self) -> bytearray: ...
    @property
    def large(self) -> bool: ...
    @property
    def start(self) -> int: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int, /) -> bytes: ...
    @overload
    def __getitem__(self, index: slice, /) -> Lines: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def to_pylist(self) -> list[bytes]: ...
    def to_arrow(self) -> Any: ...

def lines(buf: Buffer, end: int = ...) -> Lines: ...
def csv_json(
    buf: Buffer,
    start: int,
    end: int,
    literals: list[bytes],
    delimiter: int,
    key_col: int = ...,
    infer: bool = ...,
) -> Optional[tuple[bytearray, bytearray, Optional[bytearray], Optional[bytearray], int, bool]]: ...
def quoted_last_boundary(
    buf: Buffer, quote: int, lone_cr: bool = ..., final: bool = ...
) -> int: ...
def digest_records(
    payload: Buffer,
    count: int,
    base: int,
    partition: int,
    with_partition: bool,
    digests: Any,
    keys: Any,
    offsets: Any,
    at: int,
) -> int: ...
def digest_rows(
    count: int,
    values: Any,
    keys: Any,
    headers: Any,
    static: tuple[tuple[str, Optional[bytes]], ...],
    partitions: Any,
    partition: int,
    with_partition: bool,
    digests: Any,
    key_hashes: Any,
    at: int,
) -> int: ...
def key_hash(key: Optional[bytes]) -> int: ...
