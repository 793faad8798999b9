"""Lists of ids written as text ("3, 1,3"): parsed once here for the API, the pages and the long2short knobs."""

from __future__ import annotations

MAX_ID = 2**63 - 1  # a BigAutoField


class NotAnId(ValueError):
    """A part of the list is not a whole number in range; `part` is that text."""

    def __init__(self, part: str):
        super().__init__(f"'{part}' is not an id")
        self.part = part


def parse_id_list(text: str | None, minimum: int = 1, maximum: int = MAX_ID) -> list[int]:
    """'3, 1,3' -> [3, 1]: order kept, repeats dropped, empty parts skipped (None or '' -> []).

    NotAnId for a part that is not a whole number from minimum to maximum.
    """
    ids = []
    for part in (part.strip() for part in str(text or "").split(",")):
        if not part:
            continue
        if not (part.isascii() and part.isdigit() and minimum <= int(part) <= maximum):
            raise NotAnId(part)
        ids.append(int(part))
    return list(dict.fromkeys(ids))
