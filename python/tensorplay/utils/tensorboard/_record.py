"""TFRecord framing, what TensorBoard's event files are made of: each record is its length
(uint64 little-endian), the masked CRC-32C of those 8 bytes, the data, and the masked CRC-32C
of the data."""
import struct


def _table():
    poly = 0x82F63B78                    # CRC-32C (Castagnoli), reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def encode_record(data):
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def read_records(path):
    """The data of every record in the file at ``path`` (checksums checked)."""
    with open(path, "rb") as f:
        buf = f.read()
    out, i = [], 0
    while i < len(buf):
        header = buf[i:i + 8]
        if len(header) < 8:
            raise ValueError("truncated record header")
        (length,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", buf[i + 8:i + 12])
        if hcrc != masked_crc32c(header):
            raise ValueError("record length checksum mismatch")
        data = buf[i + 12:i + 12 + length]
        (dcrc,) = struct.unpack("<I", buf[i + 12 + length:i + 16 + length])
        if len(data) != length or dcrc != masked_crc32c(data):
            raise ValueError("record data checksum mismatch")
        out.append(data)
        i += 16 + length
    return out
