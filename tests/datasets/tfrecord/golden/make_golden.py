#!/usr/bin/python3
"""Writes the golden TFRecord files that Kestrel's tests read, with Python's standard library
(struct, zlib, gzip, json, base64) and Debian's python3-protobuf only, so that the bytes come from
a writer independent of Kestrel.

Run from anywhere:  /usr/bin/python3 tests/datasets/tfrecord/golden/make_golden.py
The outputs are checked in; rerunning it must reproduce them byte for byte.

  records.tfrecord        four plain records (not Examples), uncompressed
  records_gzip.tfrecord   the same stream, GZIP (mtime 0)
  records_zlib.tfrecord   the same stream, ZLIB
  examples.tfrecord       three tf.train.Examples, serialized deterministically (sorted keys)
  examples_gzip.tfrecord  the same stream, GZIP
  examples.jsonl          the Examples in kestrel-records' JSON lines format
"""
import base64
import gzip
import io
import json
import os
import struct
import zlib

from google.protobuf import descriptor_pb2, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- CRC-32C, bit by bit from its definition (reflected polynomial 0x82F63B78)
def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    length = struct.pack("<Q", len(record))
    return length + struct.pack("<I", masked_crc(length)) + record + struct.pack("<I", masked_crc(record))


def gzip_bytes(data: bytes) -> bytes:
    out = io.BytesIO()
    # mtime=0 and no file name: the output depends on the content only.
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as f:
        f.write(data)
    return out.getvalue()


# ---- tf.train.Example classes built from a descriptor written here (no protoc needed)
def example_classes():
    fd = descriptor_pb2.FileDescriptorProto(name="kestrel_golden_example.proto", package="kestrel.example",
                                            syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    bl = fd.message_type.add(name="BytesList")
    bl.field.add(name="value", number=1, type=F.TYPE_BYTES, label=F.LABEL_REPEATED)
    fl = fd.message_type.add(name="FloatList")
    fl.field.add(name="value", number=1, type=F.TYPE_FLOAT, label=F.LABEL_REPEATED).options.packed = True
    il = fd.message_type.add(name="Int64List")
    il.field.add(name="value", number=1, type=F.TYPE_INT64, label=F.LABEL_REPEATED).options.packed = True
    feat = fd.message_type.add(name="Feature")
    feat.oneof_decl.add(name="kind")
    for name, number, type_name in (("bytes_list", 1, "BytesList"), ("float_list", 2, "FloatList"),
                                    ("int64_list", 3, "Int64List")):
        feat.field.add(name=name, number=number, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                       type_name=".kestrel.example." + type_name, oneof_index=0)
    feats = fd.message_type.add(name="Features")
    entry = feats.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".kestrel.example.Feature")
    feats.field.add(name="feature", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                    type_name=".kestrel.example.Features.FeatureEntry")
    ex = fd.message_type.add(name="Example")
    ex.field.add(name="features", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                 type_name=".kestrel.example.Features")
    return message_factory.GetMessages([fd])


# Each feature: (kind, values). Floats are exact in float32 so the JSON shows them as written.
EXAMPLES = [
    {"input_ids": ("int64_list", [101, 7592, 2088, 102]), "label": ("int64_list", [1]),
     "score": ("float_list", [0.5, -2.25]), "text": ("bytes_list", [b"hello world"])},
    {"input_ids": ("int64_list", [101, 102]), "label": ("int64_list", [0]),
     "score": ("float_list", [1024.0, 0.125]), "text": ("bytes_list", ["caf\u00e9".encode(), b""])},
    {"big": ("int64_list", [-1, 2**62, -(2**63)]), "blob": ("bytes_list", [b"\xff\x00\x01"]),
     "empty": ("int64_list", []), "label": ("int64_list", [2])},
]


def build_example(classes, features):
    ex = classes["kestrel.example.Example"]()
    for name, (kind, values) in features.items():
        lst = getattr(ex.features.feature[name], kind)
        lst.SetInParent()  # an empty list still sets the kind
        lst.value.extend(values)
    return ex.SerializeToString(deterministic=True)


def json_value(kind, values):
    if kind != "bytes_list":
        return {kind: values}
    out = []
    for v in values:
        try:
            out.append(v.decode("utf-8"))
        except UnicodeDecodeError:
            out.append({"base64": base64.b64encode(v).decode()})
    return {kind: out}


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    records = [b"", b"a", b"hello, kestrel", bytes(range(256))]
    stream = b"".join(frame(r) for r in records)
    write("records.tfrecord", stream)
    write("records_gzip.tfrecord", gzip_bytes(stream))
    write("records_zlib.tfrecord", zlib.compress(stream))

    classes = example_classes()
    serialized = [build_example(classes, e) for e in EXAMPLES]
    examples = b"".join(frame(s) for s in serialized)
    write("examples.tfrecord", examples)
    write("examples_gzip.tfrecord", gzip_bytes(examples))
    lines = [json.dumps({k: json_value(*v) for k, v in sorted(e.items())}, ensure_ascii=False, separators=(",", ":"))
             for e in EXAMPLES]
    write("examples.jsonl", ("\n".join(lines) + "\n").encode())

    # Cross-check the framing with a reader written from the format description.
    pos, back = 0, []
    while pos < len(stream):
        (n,) = struct.unpack_from("<Q", stream, pos)
        assert struct.unpack_from("<I", stream, pos + 8)[0] == masked_crc(stream[pos:pos + 8])
        back.append(stream[pos + 12:pos + 12 + n])
        pos += 16 + n
    assert back == records
    assert crc32c(b"123456789") == 0xE3069283


if __name__ == "__main__":
    main()
