"""A small protocol-buffer encoder and decoder: enough of the wire format for TensorBoard's
event files (Event, Summary, HistogramProto, TensorProto, GraphDef, the hparams plugin's
messages), without the protobuf package or TensorFlow."""
import struct

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def varint(n):
    if n < 0:
        n += 1 << 64                     # int64 negatives: ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return varint(field << 3 | wire)


def uint(field, value):
    """An int32/int64/uint64/enum/bool field (skipped when None)."""
    return b"" if value is None else _key(field, VARINT) + varint(int(value))


def double(field, value):
    return b"" if value is None else _key(field, FIXED64) + struct.pack("<d", value)


def float32(field, value):
    return b"" if value is None else _key(field, FIXED32) + struct.pack("<f", value)


def blob(field, data):
    """A bytes, string or embedded-message field (str is UTF-8 encoded)."""
    if data is None:
        return b""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(field, BYTES) + varint(len(data)) + bytes(data)


def packed_doubles(field, values):
    return blob(field, struct.pack(f"<{len(values)}d", *values))


def packed_floats(field, values):
    return blob(field, struct.pack(f"<{len(values)}f", *values))


def packed_varints(field, values):
    return blob(field, b"".join(varint(int(v)) for v in values))


def parse(data):
    """The fields of one message, as ``{field number: [values]}`` in order: ints for varint
    fields, bytes for length-delimited ones, the raw 8 or 4 bytes for fixed ones."""
    fields = {}
    i, n = 0, len(data)
    while i < n:
        key, i = _read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = _read_varint(data, i)
        elif wire == FIXED64:
            value, i = data[i:i + 8], i + 8
        elif wire == BYTES:
            length, i = _read_varint(data, i)
            value, i = bytes(data[i:i + length]), i + length
        elif wire == FIXED32:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        fields.setdefault(field, []).append(value)
    return fields


def _read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def as_double(raw):
    return struct.unpack("<d", raw)[0]


def as_float(raw):
    return struct.unpack("<f", raw)[0]


def as_int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def unpack_doubles(raw):
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def unpack_floats(raw):
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))
