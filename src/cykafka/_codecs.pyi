from typing import Any, Optional

def arrow_json(
    columns: list[Any], names: Optional[list[str]], nonfinite: str = "refuse"
) -> tuple[Any, list[tuple[int, int, str]]]: ...
