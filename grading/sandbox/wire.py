"""Values and messages between a functional test's checker and solution processes (functional.py).

Only plain data crosses: None, bool, int, float, complex, str, bytes, and lists, tuples, dicts, sets and
frozensets of them (subclasses travel as their base type: a Counter arrives as a dict). A callable of the
solution crosses as a reference (its index in the solution's registry) that the checker calls back
through; anything else as an Opaque, equal only to itself. decode() builds builtin values, references
and Opaques and nothing else, so decoding what the solution sent never runs code it chose (no pickle).
A message is 8 bytes of length, then JSON. Standard library only (bwrap.py loads it from source).
"""

import json
import os

LENGTH_BYTES = 8
INLINE_INT_LIMIT = 1 << 62  # larger ints travel as hex: int <-> decimal str is capped at 4300 digits
READ_BYTES = 1 << 20


class Opaque:
    """A value of a type that cannot cross; equal only to itself, like an object without __eq__."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<the solution's {self.type_name} object>"


def encode(value, register=None):
    """value -> JSON-ready data; register(callable) -> index, or None to send callables as Opaque."""
    kind = type(value)
    if value is None or kind in (bool, float, str):
        return value
    if kind is int:
        return value if -INLINE_INT_LIMIT < value < INLINE_INT_LIMIT else {"i": hex(value)}
    if kind is list:
        return [encode(item, register) for item in value]
    for base, tag in TAGGED:
        if isinstance(value, base):
            return {tag: TAGGED_ENCODERS[tag](value, register)}
    for base in (int, float, str, list):  # a subclass (IntEnum, UserString...) travels as its base type
        if isinstance(value, base):
            plain = base(value)
            return encode(plain, register) if type(plain) is base else {"o": kind.__name__}
    if callable(value) and register is not None:
        return {"r": [register(value), getattr(value, "__name__", kind.__name__)]}
    return {"o": kind.__name__}


def encode_items(values, register):
    return [encode(item, register) for item in values]


TAGGED = ((tuple, "t"), (set, "s"), (frozenset, "f"), (dict, "d"), (bytes, "y"), (bytearray, "y"), (complex, "c"))
TAGGED_ENCODERS = {
    "t": encode_items, "s": encode_items, "f": encode_items,
    "d": lambda mapping, register: [[encode(key, register), encode(item, register)] for key, item in mapping.items()],
    "y": lambda data, register: bytes(data).hex(),
    "c": lambda number, register: [number.real, number.imag],
}


def decode(data, make_reference=None):
    """JSON data -> builtin values, Opaques, and make_reference(index, name) for each callable.

    Raises ValueError (or TypeError) on malformed data, and nothing else can happen: no code of the
    sender runs. make_reference=None refuses references.
    """
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(item, make_reference) for item in data]
    if type(data) is not dict or len(data) != 1:
        raise ValueError("malformed value from the other process")
    (tag, payload), = data.items()
    if tag == "r" and make_reference is None:
        raise ValueError("a callable was sent where only plain data may go")
    if tag not in DECODERS:
        raise ValueError(f"unknown value tag {tag!r} from the other process")
    return DECODERS[tag](payload, make_reference)


DECODERS = {
    "t": lambda items, make: tuple(decode(items, make)),
    "s": lambda items, make: set(decode(items, make)),
    "f": lambda items, make: frozenset(decode(items, make)),
    "d": lambda pairs, make: {decode(key, make): decode(item, make) for key, item in pairs},
    "i": lambda text, make: int(text, 16),
    "y": lambda text, make: bytes.fromhex(text),
    "c": lambda parts, make: complex(float(parts[0]), float(parts[1])),
    "r": lambda parts, make: make(int(parts[0]), str(parts[1])),
    "o": lambda name, make: Opaque(str(name)),
}


def send(fd, message):
    """Write one message (JSON-ready data) to a pipe."""
    data = json.dumps(message, separators=(",", ":")).encode()
    view = memoryview(len(data).to_bytes(LENGTH_BYTES, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd):
    """Read one message from a pipe; EOFError when the writer is gone."""
    size = int.from_bytes(read_exactly(fd, LENGTH_BYTES), "little")
    return json.loads(read_exactly(fd, size))


def read_exactly(fd, size):
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, READ_BYTES))
        if not chunk:
            raise EOFError("the other process closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
