from typing import Any, Optional

from typing_extensions import Buffer, disjoint_base

def arrow_json(
    columns: list[Any], names: Optional[list[str]], nonfinite: str = "refuse"
) -> tuple[Any, list[tuple[int, int, str]]]: ...

@disjoint_base
class AvroPlan:
    arrow_type: Any
    def __init__(self, schema: Any, arrow_type: Any, prefix: bytes = ...) -> None: ...
    def encode(self, arr: Any) -> tuple[Any, list[tuple[int, str, str]]]: ...

def split_lines(buf: Buffer, end: int = ...) -> tuple[bytearray, bytearray, int, bool]: ...
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
